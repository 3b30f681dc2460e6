"""Business logic of the hub; routes and jobs call these, never the other way round."""

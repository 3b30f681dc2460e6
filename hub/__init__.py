"""ChatEval Hub web application: submissions, review, evaluation pipeline and public pages (built on `evaluation`)."""

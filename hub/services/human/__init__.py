"""Human evaluation: experiments, their items and tasks, raters and assignments, adaptive stopping, MTurk, results."""

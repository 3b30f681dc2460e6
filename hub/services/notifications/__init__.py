"""What the hub tells people: statuses in words, in-app notifications, e-mail through SMTP, password-reset links."""

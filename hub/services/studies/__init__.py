"""Interactive studies (ChatHF, MILO): studies and their schemas, participants, conversations with systems, their
annotations, post-edits and reversals, images, assistance, downloads and the dashboard."""

"""golden's tests; the folders mirror the source (curation/<stage>/, judging_app/, cli)."""

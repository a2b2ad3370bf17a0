"""The authors' published raw results: fetching and verifying them (`make data`)."""

"""The reproduction report: each paper's claims ledger (`conf/claims/<paper>.yaml`) evaluated on the
JSON sidecars already built, rendered as `report/index.html` and `report/REPRODUCTION.md`.

`ledger` reads and validates a ledger, `paths` resolves a claim's path into a sidecar, `rules` compares ours with the
paper's value, `evaluate` turns claims × sidecars into verdicts, `provenance` says what data and code built them,
`render` writes the page, and `main.run` is `testtask action=report` (`make report`).
"""

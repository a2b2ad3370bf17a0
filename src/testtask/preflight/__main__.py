from testtask.preflight.cli import main

raise SystemExit(main())

from testtask.gpu_bench.cli import main

raise SystemExit(main())

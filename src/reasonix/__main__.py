from reasonix.cli.main import main

raise SystemExit(main())

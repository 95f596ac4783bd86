from vkverify.shaders.build import main

raise SystemExit(main())

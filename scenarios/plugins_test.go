package scenarios_test

import _ "github.com/chaoslab/chaoslab/harness/plugins"

package runner

import _ "github.com/chaoslab/chaoslab/harness/plugins"

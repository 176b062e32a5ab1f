package sim

// A harness report embeds its scenario, which names plug-ins: the
// calibration loads reports, so every plug-in is linked.
import _ "github.com/chaoslab/chaoslab/harness/plugins"

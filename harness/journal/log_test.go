package journal_test

import (
	"log/slog"
	"testing"

	"github.com/chaoslab/chaoslab/harness/labtest"
)

func labLog(t *testing.T) *slog.Logger { return labtest.Logger(t) }

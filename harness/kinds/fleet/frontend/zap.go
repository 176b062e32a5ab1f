package frontend

import "go.uber.org/zap"

// nopZap silences the etcd client's own logger; the server logs with slog.
func nopZap() *zap.Logger { return zap.NewNop() }

//go:build linkprometheus

package main

// Built with -tags linkprometheus, the reference links what package ops
// uses of client_golang (the metrics of serve), whose init builds the
// default registry with the Go and process collectors: status.sh's measure
// of that dependency's share.
import (
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
)

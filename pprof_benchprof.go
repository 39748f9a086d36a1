//go:build benchprof

// This file is only in binaries built with -tags benchprof, for profiling
// serve under the benchmark scripts (testdata/bench/gateway.sh -pprof):
// with AGENTAUTH_PPROF_ADDR_FILE set, net/http/pprof listens on a loopback
// port written to that file. Release builds have no profiling endpoint.

package main

import (
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

func init() {
	file := os.Getenv("AGENTAUTH_PPROF_ADDR_FILE")
	if file == "" {
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	os.WriteFile(file, []byte(l.Addr().String()+"\n"), 0o600)
	go http.Serve(l, mux)
}

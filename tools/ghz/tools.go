//go:build tools

// Package tools pins ghz, the gRPC load generator of bench/grpc/run_grpc_bench.py
// (the client of the community grpc_bench): go.mod and go.sum fix its version
// and every dependency's, so each checkout builds the same binary.
package tools

import _ "github.com/bojand/ghz/cmd/ghz"

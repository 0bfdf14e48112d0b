//go:build tools

// Package tools pins hey, the HTTP load generator of bench/http/run_hey_bench.py
// (the client zy-http publishes its numbers with): go.mod and go.sum fix its
// version and every dependency's, so each checkout builds the same binary.
package tools

import _ "github.com/rakyll/hey"

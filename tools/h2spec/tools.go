//go:build tools

// Package tools pins h2spec, the HTTP/2 conformance suite that
// tools/h2spec.sh runs against examples/http's http_server: go.mod and go.sum
// fix its version and every dependency's, so each checkout builds the same
// binary. The versions also build with Debian 12's Go 1.19.
package tools

import _ "github.com/summerwind/h2spec/cmd/h2spec"

// Command greeter_server serves helloworld.Greeter with grpc-go, the Go peer
// of bench/grpc/run_grpc_bench.py: SayHello answers "Hello " + name, as the
// greeters of grpc_bench do. Run with GOMAXPROCS=1 and taskset to confine it
// to one CPU.
//
//	greeter_server --port PORT [--tls-cert FILE --tls-key FILE]
//
// It prints "listening on 127.0.0.1:PORT" once it accepts calls (PORT 0 asks
// for an ephemeral port) and stops on SIGTERM or SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	pb "google.golang.org/grpc/examples/helloworld/helloworld"
)

type greeter struct {
	pb.UnimplementedGreeterServer
}

func (greeter) SayHello(_ context.Context, in *pb.HelloRequest) (*pb.HelloReply, error) {
	return &pb.HelloReply{Message: "Hello " + in.GetName()}, nil
}

func main() {
	port := flag.Int("port", 50051, "TCP port on 127.0.0.1 (0: ephemeral)")
	address := flag.String("address", "127.0.0.1", "address to listen on")
	cert := flag.String("tls-cert", "", "PEM certificate chain (with --tls-key: serve TLS)")
	key := flag.String("tls-key", "", "PEM private key")
	flag.Parse()
	if (*cert == "") != (*key == "") {
		fmt.Fprintln(os.Stderr, "greeter_server: --tls-cert and --tls-key go together")
		os.Exit(2)
	}
	var options []grpc.ServerOption
	if *cert != "" {
		creds, err := credentials.NewServerTLSFromFile(*cert, *key)
		if err != nil {
			fmt.Fprintln(os.Stderr, "greeter_server:", err)
			os.Exit(2)
		}
		options = append(options, grpc.Creds(creds))
	}
	listener, err := net.Listen("tcp", fmt.Sprintf("%s:%d", *address, *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "greeter_server:", err)
		os.Exit(1)
	}
	server := grpc.NewServer(options...)
	pb.RegisterGreeterServer(server, greeter{})
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		server.GracefulStop()
	}()
	fmt.Printf("listening on %s\n", listener.Addr())
	if err := server.Serve(listener); err != nil {
		fmt.Fprintln(os.Stderr, "greeter_server:", err)
		os.Exit(1)
	}
}

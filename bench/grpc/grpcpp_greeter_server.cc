// grpc++ 1.51's greeter for the gRPC benchmark (run_grpc_bench.py):
// helloworld.Greeter served on grpc++'s callback API (grpc::CallbackService),
// the API grpc recommends for performance, answering "Hello " + name as the
// greeters of grpc_bench do.
//
//   grpcpp_greeter_server [--port PORT] [--address ADDR]
//                         [--tls-cert FILE --tls-key FILE]
//
// grpc++ picks its own thread count; confine the process to one CPU with
// taskset to compare it with one-loop servers. Prints "listening on
// 127.0.0.1:PORT" once it serves (PORT 0: ephemeral); SIGTERM or SIGINT stop
// it (exit 0). Bad flags: exit 2.
#include <grpcpp/grpcpp.h>

#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "examples/grpc/protos/helloworld.grpc.pb.h"
#include "tests/grpc/peers/PeerFlags.h"

namespace {

class Greeter final : public helloworld::Greeter::CallbackService {
  grpc::ServerUnaryReactor* SayHello(grpc::CallbackServerContext* context,
                                     const helloworld::HelloRequest* request,
                                     helloworld::HelloReply* reply) override {
    reply->set_message("Hello " + request->name());
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::shared_ptr<grpc::ServerCredentials> credentials(const peers::PeerFlags& flags) {
  const std::string& cert = flags.get("tls-cert");
  const std::string& key = flags.get("tls-key");
  if (cert.empty() != key.empty()) {
    throw std::invalid_argument("--tls-cert and --tls-key go together");
  }
  if (cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({readFile(key), readFile(cert)});
  return grpc::SslServerCredentials(options);
}

}  // namespace

int main(int argc, char** argv) {
  // Blocked before grpc starts a thread, taken by the waiting thread below.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  std::shared_ptr<grpc::ServerCredentials> creds;
  std::string address;
  try {
    peers::PeerFlags flags(
        argc, argv,
        {{"port", "50051"}, {"address", "127.0.0.1"}, {"tls-cert", ""}, {"tls-key", ""}});
    creds = credentials(flags);
    address = flags.get("address") + ":" + std::to_string(flags.getInt("port"));
  } catch (const std::exception& e) {
    std::cerr << "grpcpp_greeter_server: " << e.what() << "\n";
    return 2;
  }
  Greeter greeter;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, creds, &port);
  builder.RegisterService(&greeter);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    std::cerr << "grpcpp_greeter_server: cannot listen on " << address << "\n";
    return 1;
  }
  std::cout << "listening on 127.0.0.1:" << port << std::endl;
  std::thread stopper([&] {
    int signal = 0;
    sigwait(&stopSignals, &signal);
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  });
  server->Wait();
  stopper.join();
  return 0;
}

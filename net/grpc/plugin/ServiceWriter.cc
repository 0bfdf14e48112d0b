#include "net/grpc/plugin/ServiceWriter.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/printer.h>

#include <string>

#include "net/grpc/plugin/Names.h"
#include "net/grpc/plugin/StubWriter.h"

namespace libnet::grpc::plugin {

namespace gp = google::protobuf;

namespace {

// `text` as // comment lines of at most `width` characters (words kept
// whole), each printed on its own so that the printer indents it.
void printComment(gp::io::Printer& out, const std::string& text, size_t width = 76) {
  std::string line = "//";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (line.size() > 2 && line.size() + 1 + word.size() > width) {
      out.Print("$line$\n", "line", line);
      line = "//";
    }
    line += " " + word;
    start = end + 1;
  }
  out.Print("$line$\n", "line", line);
}

}  // namespace

ServiceWriter::ServiceWriter(const gp::ServiceDescriptor* service)
    : service_(service),
      vars_{{"service", service->name()},
            {"full_name", service->full_name()},
            {"file", service->file()->name()}} {}

ServiceWriter::Vars ServiceWriter::methodVars(const gp::MethodDescriptor* method) const {
  Vars vars = vars_;
  vars["method"] = method->name();
  vars["path"] = "/" + service_->full_name() + "/" + method->name();
  vars["kind"] = methodKind(method);
  vars["req"] = requestType(method);
  vars["resp"] = responseType(method);
  vars["rpc"] = "rpc " + method->name() + " (" + vars["path"] + "). ";
  return vars;
}

void ServiceWriter::writeHeader(gp::io::Printer& out) const {
  out.Print(vars_,
            "// service $full_name$ ($file$).\n"
            "class $service$ final {\n"
            " public:\n"
            "  $service$() = delete;\n\n"
            "  // \"$full_name$\" in the generated descriptor pool: its methods and\n"
            "  // messages, for server reflection.\n"
            "  static const ::google::protobuf::ServiceDescriptor* descriptor();\n\n");
  out.Indent();
  writeCallbackClass(out);
  out.Print("\n");
  writeCoroClass(out);
  out.Print("\n");
  StubWriter(service_).writeClass(out);
  out.Outdent();
  out.Print("};\n");
}

void ServiceWriter::writeCallbackClass(gp::io::Printer& out) const {
  out.Print(vars_,
            "// Callback handlers: derive, override the methods served, give the\n"
            "// object to a grpc::Server (which does not own it). Each runs on the\n"
            "// call's loop with a ServerStream (net/grpc/Service.h) that may be kept\n"
            "// and answered later, from any thread. A method not overridden answers\n"
            "// UNIMPLEMENTED.\n"
            "class Service : public ::libnet::grpc::Service {\n"
            " public:\n"
            "  Service();\n"
            "  ~Service() override = default;\n");
  out.Indent();
  for (int i = 0; i < service_->method_count(); ++i) {
    Vars vars = methodVars(service_->method(i));
    out.Print("\n");
    printComment(out, vars["rpc"] + callbackContract(service_->method(i)));
    out.Print(vars,
              "virtual void $method$(::libnet::grpc::ServerStreamPtr<$req$, $resp$> call);\n");
  }
  out.Outdent();
  out.Print("};\n");
}

void ServiceWriter::writeCoroClass(gp::io::Printer& out) const {
  out.Print(vars_,
            "// Coroutine handlers: the same, with a coroutine per call that gets a\n"
            "// CoroStream (net/grpc/CoroStream.h) and whose Status ends the call\n"
            "// (a throw: INTERNAL). A method not overridden answers UNIMPLEMENTED.\n"
            "class CoroService : public ::libnet::grpc::Service {\n"
            " public:\n"
            "  CoroService();\n"
            "  ~CoroService() override = default;\n");
  out.Indent();
  for (int i = 0; i < service_->method_count(); ++i) {
    Vars vars = methodVars(service_->method(i));
    out.Print("\n");
    printComment(out, vars["rpc"] + coroutineContract(service_->method(i)));
    out.Print(vars,
              "virtual ::libnet::coro::Task<::libnet::grpc::Status> $method$(\n"
              "    ::libnet::grpc::CoroStream<$req$, $resp$>& call);\n");
  }
  out.Outdent();
  out.Print("};\n");
}

void ServiceWriter::writeSource(gp::io::Printer& out) const {
  out.Print(vars_,
            "const ::google::protobuf::ServiceDescriptor* $service$::descriptor() {\n"
            "  static const ::google::protobuf::ServiceDescriptor* const descriptor =\n"
            "      ::google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(\n"
            "          \"$full_name$\");\n"
            "  return descriptor;\n"
            "}\n\n");
  writeCallbackSource(out);
  writeCoroSource(out);
}

void ServiceWriter::writeCallbackSource(gp::io::Printer& out) const {
  out.Print(vars_,
            "$service$::Service::Service() : ::libnet::grpc::Service($service$::descriptor()) {\n");
  for (int i = 0; i < service_->method_count(); ++i) {
    out.Print(methodVars(service_->method(i)),
              "  addMethod<$req$, $resp$>(\n"
              "      \"$method$\", ::libnet::grpc::MethodKind::$kind$,\n"
              "      [this](::libnet::grpc::ServerStreamPtr<$req$, $resp$> call) {\n"
              "        $method$(std::move(call));\n"
              "      });\n");
  }
  out.Print("}\n");
  for (int i = 0; i < service_->method_count(); ++i) {
    out.Print(methodVars(service_->method(i)),
              "\nvoid $service$::Service::$method$(\n"
              "    ::libnet::grpc::ServerStreamPtr<$req$, $resp$> call) {\n"
              "  call->finish(::libnet::grpc::Status(::libnet::grpc::StatusCode::kUnimplemented, "
              "\"\"));\n"
              "}\n");
  }
  out.Print("\n");
}

void ServiceWriter::writeCoroSource(gp::io::Printer& out) const {
  out.Print(vars_,
            "$service$::CoroService::CoroService() : "
            "::libnet::grpc::Service($service$::descriptor()) {\n");
  for (int i = 0; i < service_->method_count(); ++i) {
    out.Print(methodVars(service_->method(i)),
              "  addCoroMethod<$req$, $resp$>(\n"
              "      \"$method$\", ::libnet::grpc::MethodKind::$kind$,\n"
              "      [this](::libnet::grpc::CoroStream<$req$, $resp$>& call) {\n"
              "        return $method$(call);\n"
              "      });\n");
  }
  out.Print("}\n");
  for (int i = 0; i < service_->method_count(); ++i) {
    out.Print(methodVars(service_->method(i)),
              "\n::libnet::coro::Task<::libnet::grpc::Status> $service$::CoroService::$method$(\n"
              "    ::libnet::grpc::CoroStream<$req$, $resp$>& /*call*/) {\n"
              "  co_return ::libnet::grpc::Status(::libnet::grpc::StatusCode::kUnimplemented, "
              "\"\");\n"
              "}\n");
  }
  out.Print("\n");
}

}  // namespace libnet::grpc::plugin

#include "net/coro/Input.h"

#include "net/Buffer.h"
#include "net/coro/StreamState.h"

namespace libnet::coro {

std::string_view Input::view() const { return {buffer().peek(), size_}; }

Buffer& Input::buffer() const { return state_->input(); }

void Input::consume() const { buffer().retrieve(size_); }

}  // namespace libnet::coro

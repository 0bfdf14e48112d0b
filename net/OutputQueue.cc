#include "net/OutputQueue.h"

#include "net/BufferPool.h"

namespace libnet {

void OutputQueue::append(std::string_view data) {
  if (data.empty()) return;
  Buffer& to = tail();
  pool_->lend(&to);
  to.append(data);
}

void OutputQueue::append(Buffer* buffer, bool lendBack) {
  if (buffer->readableBytes() == 0) return;
  if (!empty()) {
    append(buffer->view());
    buffer->retrieveAll();
    return;
  }
  // Nothing queued: take the bytes as they are (a view of received bytes
  // included: they go out from where the kernel put them), and give
  // `buffer` our empty storage.
  waiting_.exchange(*buffer);
  if (lendBack) pool_->lend(buffer);
}

void OutputQueue::appendFile(UniqueFd file, off_t offset, size_t length) {
  if (length == 0) return;
  if (!files_) files_ = std::make_unique<std::list<File>>();
  files_->push_back(File{std::move(file), offset, length});
}

void OutputQueue::appendFile(UniqueFd file, off_t offset, size_t length, Buffer* head) {
  if (head != nullptr) {
    append(head->view());
    head->retrieveAll();
  }
  appendFile(std::move(file), offset, length);
}

void OutputQueue::fileSent() {
  waiting_.swap(files_->front().after);  // waiting_ is empty whenever a file is first
  files_->pop_front();
}

bool OutputQueue::startSend() {
  if (waiting_.readableBytes() == 0) return false;
  inFlight_.exchange(waiting_);
  inFlightReleased_ = 0;
  return true;
}

void OutputQueue::sent(size_t bytes) {
  inFlight_.retrieve(bytes);
  if (inFlight_.readableBytes() == 0) {
    // Viewed bytes (a receive buffer) go back as soon as they are out.
    inFlight_.releaseBorrowed();
    inFlightReleased_ = 0;
  } else if (inFlight_.prependableBytes() >= inFlightReleased_ + kReleaseStep) {
    // A large send going out in parts (a slow peer): the sent part's
    // memory goes back now, not when the rest is out, or a connection
    // holding a full queue would keep up to twice it resident.
    inFlightReleased_ = inFlight_.releaseSpentPages(inFlightReleased_);
  }
}

void OutputQueue::releaseViews() {
  inFlight_.releaseBorrowed();
  waiting_.releaseBorrowed();
}

size_t OutputQueue::bufferedBytes() const {
  size_t bytes = inFlight_.readableBytes() + waiting_.readableBytes();
  if (hasFile()) {
    for (const File& file : *files_) bytes += file.after.readableBytes();
  }
  return bytes;
}

size_t OutputQueue::queuedBytes() const {
  size_t bytes = bufferedBytes();
  if (hasFile()) {
    for (const File& file : *files_) bytes += file.remaining;
  }
  return bytes;
}

size_t OutputQueue::capacity() const {
  size_t bytes = inFlight_.capacity() + waiting_.capacity();
  if (hasFile()) {
    for (const File& file : *files_) bytes += file.after.capacity();
  }
  return bytes;
}

void OutputQueue::reclaim() {
  pool_->reclaim(&inFlight_);
  pool_->reclaim(&waiting_);
}

void OutputQueue::recycle() {
  // What a cancelled send left is not going anywhere now.
  inFlight_.retrieveAll();
  waiting_.retrieveAll();
  pool_->recycle(&inFlight_);
  pool_->recycle(&waiting_);
}

void OutputQueue::clear() {
  if (files_) files_->clear();
  waiting_.retrieveAll();
  pool_->reclaim(&waiting_);
  // inFlight_ is left alone: a send may still be reading it, and its storage
  // must not serve another connection before that send completes.
}

}  // namespace libnet

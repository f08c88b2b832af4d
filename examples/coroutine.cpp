// coroutine: requests handled by C++20 coroutines that hop between threads. Each request is a
// stint::async_scope: it begins on the thread that accepts the request and ends on the thread that
// finishes it, and covers the time the coroutine spends suspended, which no thread's scope can. The
// trace (coroutine.pt.trace.json) shows each request on an async track of its own, and key_averages a
// "request" row beside the threads' scopes.
// Usage: coroutine [trace path] [requests]
#include <stint/stint.hpp>

#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <deque>
#include <exception>
#include <iostream>
#include <latch>
#include <mutex>
#include <string>
#include <thread>

namespace coroutine_example {

/// A thread that resumes the coroutines posted to it, each after `delay` (an I/O wait, say).
class executor {
public:
    executor(std::string name, std::chrono::microseconds delay) : delay_(delay) {
        thread_ = std::thread([this, name = std::move(name)] {
            stint::set_thread_name(name);
            run();
        });
    }
    ~executor() {
        {
            std::lock_guard lock(mutex_);
            closing_ = true;
        }
        ready_.notify_one();
        thread_.join();
    }
    executor(const executor&) = delete;
    executor& operator=(const executor&) = delete;

    void post(std::coroutine_handle<> h) {
        // Notified under the lock: the coroutine may finish on this executor, and the program destroy
        // the executor that posted it, before a notify made after unlocking returned.
        std::lock_guard lock(mutex_);
        queue_.push_back(h);
        ready_.notify_one();
    }

private:
    void run() {
        for (;;) {
            std::coroutine_handle<> h;
            {
                std::unique_lock lock(mutex_);
                ready_.wait(lock, [this] { return closing_ || !queue_.empty(); });
                if (queue_.empty()) return;
                h = queue_.front();
                queue_.pop_front();
            }
            std::this_thread::sleep_for(delay_);
            h.resume();
        }
    }

    std::chrono::microseconds delay_;
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::coroutine_handle<>> queue_;
    bool closing_ = false;
    std::thread thread_;
};

/// `co_await resume_on{ex}`: suspends, and continues on `ex`'s thread.
struct resume_on {
    executor& where;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) const { where.post(h); }
    void await_resume() const noexcept {}
};

/// A coroutine nobody awaits: it starts at once and frees its frame when it finishes.
struct detached {
    struct promise_type {
        detached get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
};

inline double compute(int id) {
    double x = id;
    for (int i = 0; i < 2000; ++i) x = x * 0.999 + 1.0;
    return x;
}

/// Parses on the accepting thread, reads on the I/O thread, computes and replies on the CPU thread.
/// The async span lives in the coroutine frame and ends with it, on the CPU thread.
inline detached handle_request(int id, executor& io, executor& cpu, std::latch& done, double& result) {
    stint::async_scope span("request");
    {
        STINT_SCOPE("parse");
    }
    co_await resume_on{io};
    {
        STINT_SCOPE("read");
    }
    co_await resume_on{cpu};
    {
        STINT_SCOPE("compute");
        result = compute(id);
    }
    span.end();
    done.count_down();
}

/// Profiles `requests` requests with `prof`, prints its table and writes its trace to `path`.
inline void run(stint::profiler<>& prof, const std::string& path, int requests) {
    std::vector<double> results(static_cast<std::size_t>(requests));
    {
        executor io("io", std::chrono::microseconds(300));
        executor cpu("cpu", std::chrono::microseconds(0));
        std::latch done(requests);
        prof.start();
        for (int i = 0; i < requests; ++i) {
            STINT_SCOPE("accept");
            handle_request(i, io, cpu, done, results[static_cast<std::size_t>(i)]);
        }
        done.wait();
        prof.stop();
    }
    std::cout << prof.key_averages().table({.sort_by = "cpu_time_total", .row_limit = 6});
    prof.export_chrome_trace(path);
}

}  // namespace coroutine_example

#ifndef STINT_EXAMPLE_NO_MAIN
int main(int argc, char** argv) {
    const std::string path = argc > 1 ? argv[1] : "coroutine.pt.trace.json";
    const int requests = argc > 2 ? std::stoi(argv[2]) : 50;
    stint::profiler<> prof;
    coroutine_example::run(prof, path, requests);
    std::cout << "wrote " << path << "\n";
}
#endif

// thread_pool: the main thread submits tasks to a pool of worker threads. Each task carries a
// stint::flow_token, so the trace draws an arrow from the scope that submitted it to the scope that
// ran it (open thread_pool.pt.trace.json in https://ui.perfetto.dev and click a task).
// Usage: thread_pool [trace path] [tasks] [workers]
#include <stint/stint.hpp>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pool_example {

/// A fixed set of workers taking tasks from one queue.
class thread_pool {
public:
    explicit thread_pool(int workers) {
        for (int w = 0; w < workers; ++w) {
            threads_.emplace_back([this, w] {
                stint::set_thread_name("pool worker " + std::to_string(w));
                work();
            });
        }
    }
    ~thread_pool() {
        {
            std::lock_guard lock(mutex_);
            closing_ = true;
        }
        ready_.notify_all();
        for (std::thread& t : threads_) t.join();
    }
    thread_pool(const thread_pool&) = delete;
    thread_pool& operator=(const thread_pool&) = delete;

    /// Queues `job`; the flow begins here, inside the caller's scope.
    void submit(std::function<void()> job) {
        task t{stint::flow_token::begin(), std::move(job)};
        {
            std::lock_guard lock(mutex_);
            queue_.push_back(std::move(t));
            ++pending_;
        }
        ready_.notify_one();
    }

    /// Waits until every submitted task has run.
    void wait_idle() {
        std::unique_lock lock(mutex_);
        idle_.wait(lock, [this] { return pending_ == 0; });
    }

private:
    struct task {
        stint::flow_token flow;
        std::function<void()> job;
    };

    void work() {
        for (;;) {
            task t;
            {
                std::unique_lock lock(mutex_);
                ready_.wait(lock, [this] { return closing_ || !queue_.empty(); });
                if (queue_.empty()) return;
                t = std::move(queue_.front());
                queue_.pop_front();
            }
            {
                STINT_SCOPE("pool::run");
                t.flow.end();  // the arrow ends here, inside pool::run
                t.job();
            }
            std::lock_guard lock(mutex_);
            if (--pending_ == 0) idle_.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable ready_;
    std::condition_variable idle_;
    std::deque<task> queue_;
    std::size_t pending_ = 0;
    bool closing_ = false;
    std::vector<std::thread> threads_;
};

/// Some work worth a few microseconds.
inline double checksum(int n) {
    STINT_SCOPE("checksum");
    double sum = 0;
    for (int i = 1; i <= 200 + n % 50; ++i) sum += 1.0 / static_cast<double>(i * (n + 1));
    return sum;
}

/// Profiles `tasks` tasks on `workers` workers with `prof`, prints its table and writes its trace to
/// `path`.
inline void run(stint::profiler<>& prof, const std::string& path, int tasks, int workers) {
    std::vector<double> results(static_cast<std::size_t>(tasks));
    {
        thread_pool pool(workers);
        prof.start();
        {
            STINT_SCOPE("produce");
            for (int i = 0; i < tasks; ++i) {
                STINT_SCOPE("submit");
                pool.submit([i, &results] { results[static_cast<std::size_t>(i)] = checksum(i); });
            }
        }
        pool.wait_idle();
        prof.stop();
    }
    std::cout << prof.key_averages().table({.sort_by = "cpu_time_total", .row_limit = 6});
    std::cout << prof.events().flows().size() << " tasks linked to their submitters, "
              << prof.events().unmatched().total() << " unmatched points\n";
    prof.export_chrome_trace(path);
}

}  // namespace pool_example

#ifndef STINT_EXAMPLE_NO_MAIN
int main(int argc, char** argv) {
    const std::string path = argc > 1 ? argv[1] : "thread_pool.pt.trace.json";
    const int tasks = argc > 2 ? std::stoi(argv[2]) : 10'000;
    const int workers = argc > 3 ? std::stoi(argv[3]) : 4;
    stint::profiler<> prof;
    pool_example::run(prof, path, tasks, workers);
    std::cout << "wrote " << path << "\n";
}
#endif

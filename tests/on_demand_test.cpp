// On-demand capture in process (profiler/on_demand.hpp): requests parsed strictly, a capture answered
// with its counts, a second request refused while one runs, a capture cut short by disable_on_demand()
// still written. tests/on_demand/run.py drives tools/stint-capture against the example service.

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <stint/profiler/on_demand.hpp>

#include "test_util.hpp"

namespace {

using stint::detail::parse_capture_request;

// Sends one request line to the socket at `path` and returns the answer line.
std::string ask(const std::string& path, const std::string& request) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    REQUIRE(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0);
    REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
    std::string answer;
    char c = 0;
    while (::recv(fd, &c, 1, 0) == 1 && c != '\n') answer.push_back(c);
    ::close(fd);
    return answer;
}

// A thread recording scopes until stopped.
class busy_thread {
public:
    busy_thread()
        : thread_([this] {
              while (!done_) {
                  STINT_SCOPE("work");
                  std::this_thread::sleep_for(std::chrono::microseconds(200));
              }
          }) {}
    ~busy_thread() {
        done_ = true;
        thread_.join();
    }
    busy_thread(const busy_thread&) = delete;
    busy_thread& operator=(const busy_thread&) = delete;

private:
    std::atomic<bool> done_{false};
    std::thread thread_;
};

}  // namespace

TEST_CASE("capture requests are parsed strictly, each refusal saying what is wrong") {
    const auto duration = parse_capture_request("capture duration_ms=1500 output=/tmp/a b.json");
    CHECK(duration.duration == std::chrono::milliseconds(1500));
    CHECK_FALSE(duration.steps);
    CHECK(duration.output == "/tmp/a b.json");  // output takes the rest of the line
    const auto steps = parse_capture_request("capture steps=10 timeout_ms=2000 output=/x.json");
    CHECK(steps.steps == 10);
    CHECK(steps.timeout == std::chrono::milliseconds(2000));
    CHECK_FALSE(steps.dump);
    const auto dump = parse_capture_request("dump output=/tmp/now.pt.trace.json.gz");
    CHECK(dump.dump);
    CHECK_FALSE(dump.duration);
    CHECK(dump.output == "/tmp/now.pt.trace.json.gz");
    const std::pair<const char*, const char*> bad[] = {
        {"", "must begin with \"capture \" or \"dump \""},
        {"capture", "must begin with \"capture \""},
        {"dump", "must begin with"},
        {"dump duration_ms=5 output=/x.json", "a dump takes output=PATH only, not \"duration_ms\""},
        {"dump output=/x.txt", "a dump's output must end in .json, .json.gz or .pftrace"},
        {"dump output=x.json", "output must be an absolute path"},
        {"record duration_ms=5 output=/x", "must begin"},
        {"capture duration_ms=5", "output=PATH is missing"},
        {"capture output=/x", "give either duration_ms or steps"},
        {"capture duration_ms=5 steps=3 output=/x", "give either duration_ms or steps"},
        {"capture duration_ms=-5 output=/x", "duration_ms must be a positive integer, got \"-5\""},
        {"capture duration_ms=5s output=/x", "duration_ms must be a positive integer, got \"5s\""},
        {"capture duration_ms=99999999999999999999 output=/x", "positive integer"},
        {"capture steps=0 output=/x", "steps must be a positive integer"},
        {"capture duration_ms=5 timeout_ms=9 output=/x", "timeout_ms applies to steps only"},
        {"capture duration_ms=5 colour=red output=/x", "unknown or repeated key \"colour\""},
        {"capture duration_ms=5 duration_ms=6 output=/x", "unknown or repeated key \"duration_ms\""},
        {"capture duration_ms=5 output=relative.json", "output must be an absolute path"},
        {"capture duration_ms=5 =3 output=/x", "expected key=value"},
    };
    for (const auto& entry : bad) {
        const std::string line = entry.first;  // (clang 14 captures no structured binding in CAPTURE)
        const std::string why = entry.second;
        CAPTURE(line);
        try {
            (void)parse_capture_request(line);
            FAIL("accepted");
        } catch (const std::invalid_argument& e) {
            CHECK(std::string(e.what()).find(why) != std::string::npos);
            CHECK(std::string(e.what()).rfind("malformed request: ", 0) == 0);
        }
    }
    CHECK_THROWS_AS(parse_capture_request("capture duration_ms=5 output=/" + std::string(5000, 'x')),
                    std::invalid_argument);
}

TEST_CASE("an on-demand capture records for its duration, writes its trace and answers with the counts") {
    stint_test::temp_dir dir;
    const std::string socket = stint::enable_on_demand({.socket_dir = dir.file("sockets")});
    CHECK(socket == dir.file("sockets") + "/" + std::to_string(::getpid()) + ".sock");
    CHECK(stint::enable_on_demand({.socket_dir = dir.file("sockets")}) == socket);  // idempotent
    struct stat info{};
    REQUIRE(::stat(dir.file("sockets").c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0700);
    {
        busy_thread worker;
        const std::string trace = dir.file("trace.json");
        const std::string answer = ask(socket, "capture duration_ms=200 output=" + trace + "\n");
        CAPTURE(answer);
        REQUIRE(answer.rfind("ok ", 0) == 0);
        CHECK(answer.find("ended=complete") != std::string::npos);
        CHECK(answer.find("path=" + trace) != std::string::npos);
        const nlohmann::json json = stint_test::read_json(trace);
        const auto recorded = json.at("stint").at("recorded").get<std::uint64_t>();
        CHECK(recorded > 0);
        CHECK(answer.find("recorded=" + std::to_string(recorded) + " ") != std::string::npos);
        std::size_t work = 0;
        for (const auto& e : stint_test::timed_events(json)) work += e.at("name") == "work" ? 1 : 0;
        CHECK(work > 0);

        // Refused requests: malformed, unwritable; the listener goes on serving.
        CHECK(ask(socket, "hello\n").rfind("error: malformed request", 0) == 0);
        const std::string unwritable = ask(socket, "capture duration_ms=10 output=/proc/stint/none/t.json\n");
        CHECK(unwritable.rfind("error: ", 0) == 0);
        CHECK(unwritable.find("/proc/stint/none/t.json") != std::string::npos);
        CHECK(ask(socket, "capture duration_ms=700000 output=" + trace + "\n").find("600000 ms at most") !=
              std::string::npos);
        CHECK(ask(socket, "capture duration_ms=20 output=" + dir.file("again.json") + "\n").rfind("ok ", 0) == 0);
    }
    stint::disable_on_demand();
    CHECK_FALSE(std::filesystem::exists(socket));
}

TEST_CASE("a dump request writes the running flight recorder's window, which goes on recording") {
    stint_test::temp_dir dir;
    const std::string socket = stint::enable_on_demand({.socket_dir = dir.file("sockets")});
    const std::string trace = dir.file("now.pt.trace.json");
    CHECK(ask(socket, "dump output=" + trace + "\n") ==
          "error: no flight recorder is recording in this process (profiler_options::flight_recorder); ask for a "
          "capture instead");
    stint::profiler_options<> options;
    options.flight_recorder = stint::flight_recorder_options{.budget_bytes = 8 << 20};
    stint::profiler<> prof(options);
    prof.start();
    {
        busy_thread worker;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        const std::string answer = ask(socket, "dump output=" + trace + "\n");
        CAPTURE(answer);
        REQUIRE(answer.rfind("ok events=", 0) == 0);
        CHECK(answer.find(" path=" + trace + " table=" + dir.file("now.pt.trace.txt")) != std::string::npos);
        const nlohmann::json json = stint_test::read_json(trace);
        CHECK(json.at("flightRecorder").at("trigger") == "request");
        std::size_t work = 0;
        for (const auto& e : stint_test::timed_events(json)) work += e.at("name") == "work" ? 1 : 0;
        CHECK(work > 0);
        CHECK(stint_test::read_file(dir.file("now.pt.trace.txt")).find("work") != std::string::npos);
        CHECK(prof.is_running());  // still recording
        // A capture cannot start while the flight recorder records: it says why.
        CHECK(ask(socket, "capture duration_ms=10 output=" + dir.file("c.json") + "\n").find("already recording") !=
              std::string::npos);
    }
    prof.stop();
    CHECK(ask(socket, "dump output=" + trace + "\n").rfind("error: no flight recorder is recording", 0) == 0);
    stint::disable_on_demand();
}

TEST_CASE("a second request while a capture runs is refused; disable_on_demand() cuts a capture short, written") {
    stint_test::temp_dir dir;
    const std::string socket = stint::enable_on_demand({.socket_dir = dir.file("s")});
    busy_thread worker;
    std::string first;
    std::thread long_capture(
        [&] { first = ask(socket, "capture duration_ms=60000 output=" + dir.file("long.json") + "\n"); });
    // Wait until the first capture runs (its session records), then ask again.
    for (int i = 0; i < 5000 && !stint::is_recording(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(stint::is_recording());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the worker records a few scopes
    const std::string second = ask(socket, "capture duration_ms=10 output=" + dir.file("second.json") + "\n");
    CHECK(second.rfind("error: busy: a capture (to " + dir.file("long.json") + ") is already running", 0) == 0);
    CHECK_FALSE(std::filesystem::exists(dir.file("second.json")));
    const auto began = std::chrono::steady_clock::now();
    stint::disable_on_demand();
    long_capture.join();
    CHECK(std::chrono::steady_clock::now() - began < std::chrono::seconds(30));
    CAPTURE(first);
    CHECK(first.rfind("ok ", 0) == 0);
    CHECK(first.find("ended=exiting") != std::string::npos);
    // What it recorded until then is in the file, as the answer says (a slow build may have recorded
    // nothing yet: the file is still a whole trace).
    const auto recorded = stint_test::read_json(dir.file("long.json")).at("stint").at("recorded").get<std::uint64_t>();
    CHECK(first.find("recorded=" + std::to_string(recorded) + " ") != std::string::npos);
    CHECK_FALSE(stint::is_recording());
}

TEST_CASE("a steps capture holds exactly the steps asked for, whole, and answers what the file holds") {
    stint_test::temp_dir dir;
    const std::string socket = stint::enable_on_demand({.socket_dir = dir.file("sockets")});
    // Load: threads spinning without a pause, one recording scopes, while another thread steps.
    std::atomic<bool> done{false};
    std::vector<std::thread> spinners;
    for (int i = 0; i < 3; ++i) {
        spinners.emplace_back([&] {
            volatile std::uint64_t sink = 0;
            while (!done.load(std::memory_order_relaxed)) sink = sink + 1;
        });
    }
    busy_thread worker;
    std::thread stepper([&] {
        while (!done.load(std::memory_order_relaxed)) {
            {
                STINT_SCOPE("step_work");
                std::this_thread::sleep_for(std::chrono::microseconds(300));
            }
            stint::step_tracker::increment_step("test loop");
        }
    });
    for (const int steps : {1, 10, 10, 10, 25}) {
        CAPTURE(steps);
        const std::string trace = dir.file("steps.json");
        const std::string answer = ask(socket, fmt::format("capture steps={} output={}\n", steps, trace));
        CAPTURE(answer);
        if (answer.rfind("ok ", 0) != 0) {  // no REQUIRE: the threads must be joined
            FAIL_CHECK("the capture failed");
            continue;
        }
        CHECK(answer.find(fmt::format(" steps={} ", steps)) != std::string::npos);
        CHECK(answer.find("ended=complete") != std::string::npos);
        const nlohmann::json json = stint_test::read_json(trace);
        CHECK(answer.find(fmt::format("recorded={} ", json.at("stint").at("recorded").get<std::uint64_t>())) !=
              std::string::npos);
        std::vector<std::pair<double, double>> spans;  // the ProfilerStep spans, [ts, ts + dur]
        std::vector<std::int64_t> numbers;
        std::vector<double> work;  // the stepping thread's step_work starts
        for (const auto& e : stint_test::timed_events(json)) {
            const std::string name = e.at("name");
            if (name.rfind("ProfilerStep#", 0) == 0) {
                spans.emplace_back(e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>());
                numbers.push_back(std::stoll(name.substr(13)));
            } else if (name == "step_work") {
                work.push_back(e.at("ts").get<double>());
            }
        }
        // Exactly that many steps, consecutive, each holding its one whole step_work: none before the
        // first step began, none after the last ended.
        CHECK(spans.size() == static_cast<std::size_t>(steps));
        std::sort(numbers.begin(), numbers.end());
        for (std::size_t i = 1; i < numbers.size(); ++i) CHECK(numbers[i] == numbers[i - 1] + 1);
        CHECK(work.size() == static_cast<std::size_t>(steps));
        for (const double ts : work) {
            CHECK(std::any_of(spans.begin(), spans.end(), [&](const auto& s) { return s.first <= ts && ts <= s.second; }));
        }
    }
    done = true;
    stepper.join();
    for (auto& t : spinners) t.join();
    // Nobody steps: the capture waits for its timeout and says nothing was written.
    const std::string idle = ask(socket, "capture steps=3 timeout_ms=100 output=" + dir.file("idle.json") + "\n");
    CHECK(idle.rfind("error: timeout: no step came within 100 ms", 0) == 0);
    CHECK_FALSE(std::filesystem::exists(dir.file("idle.json")));
    stint::disable_on_demand();
}

TEST_CASE("enable_on_demand refuses a socket directory that others can enter") {
    stint_test::temp_dir dir;
    const std::string open_dir = dir.file("open");
    REQUIRE(::mkdir(open_dir.c_str(), 0755) == 0);
    REQUIRE(::chmod(open_dir.c_str(), 0755) == 0);
    try {
        stint::enable_on_demand({.socket_dir = open_dir});
        FAIL("accepted a directory with mode 0755");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()).find("mode 0700") != std::string::npos);
    }
    CHECK_FALSE(std::filesystem::exists(open_dir + "/" + std::to_string(::getpid()) + ".sock"));
}

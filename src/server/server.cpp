// The listener: binds, accepts, spawns one coroutine session per connection; signals and graceful shutdown.
//
// One io_context per I/O thread, connections dealt out round-robin: a connection's handlers all run on one
// thread, so a completed write resumes its coroutine on the same thread. With one shared io_context run
// by several threads (and a strand per connection), every completion was handed to the scheduler, which
// woke another idle thread (an epoll_ctl on the interrupter plus futex traffic, seen with strace -f on
// each WebSocket frame) — tens of microseconds per event on the latency path for nothing.
#include "server/server.h"

#include <cstdio>
#include <thread>
#include <utility>  // before Asio: Boost 1.74 awaitable.hpp needs std::exchange

#include <boost/asio/signal_set.hpp>

#include "server/event_channel.h"
#include "server/sessions.h"
#include "server/state.h"
#include "util/error.h"

namespace flint::server {

struct Server::Impl {
    std::shared_ptr<ServerState> st;
    std::vector<std::unique_ptr<net::io_context>> contexts;  // one per I/O thread; [0] also accepts
    net::io_context& ioc;
    tcp::acceptor acceptor{ioc};
    size_t next_context = 0;
    std::optional<net::signal_set> signals;
    std::vector<std::thread> threads;
    std::atomic<bool> stop_started{false};
    int port = 0;

    net::awaitable<void> accept_loop() {
        for (;;) {
            boost::system::error_code ec;
            net::io_context& ctx = *contexts[next_context++ % contexts.size()];
            tcp::socket sock = co_await acceptor.async_accept(ctx.get_executor(), net::redirect_error(net::use_awaitable, ec));
            if (ec) {
                if (!acceptor.is_open()) co_return;
                continue;  // e.g. EMFILE: keep serving the connections we have
            }
            auto ex = sock.get_executor();
            net::co_spawn(ex, session(st, std::move(sock)), net::detached);
        }
    }

    static net::awaitable<void> session(std::shared_ptr<ServerState> st, tcp::socket sock) {
        try {
            co_await run_http_session(st, std::move(sock));
        } catch (const std::exception& e) {
            // A session never takes the server down; this is a bug or a write to a vanished client.
            if (!st->cfg.quiet) std::fprintf(stderr, "flint: session ended: %s\n", e.what());
        }
    }

    void wait_signals() {
        signals->async_wait([this](const boost::system::error_code& ec, int sig) {
            if (ec) return;
            if (sig == SIGHUP) {
                try {
                    st->limits.reload();
                    std::fprintf(stderr, "flint: rate limits reloaded\n");
                } catch (const std::exception& e) {
                    std::fprintf(stderr, "flint: rate limits not reloaded: %s\n", e.what());
                }
                wait_signals();
                return;
            }
            std::fprintf(stderr, "flint: signal %d: shutting down (finishing in-flight responses)\n", sig);
            std::thread([this] { graceful_stop(); }).detach();
        });
    }

    void graceful_stop() {
        if (stop_started.exchange(true)) return;
        st->stopping = true;
        net::post(ioc, [this] {
            boost::system::error_code ec;
            acceptor.close(ec);
            if (signals) signals->cancel(ec);
        });
        // Cancelled generations end with their terminal event, which sessions write and store; wait for
        // that (bounded), then stop the io threads, dropping idle keep-alive connections.
        st->models.drain_all();
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (st->metrics.in_flight > 0 && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        for (auto& c : contexts) c->stop();
    }

    static std::vector<std::unique_ptr<net::io_context>> make_contexts(int n) {
        std::vector<std::unique_ptr<net::io_context>> v;
        for (int i = 0; i < std::max(1, n); ++i) v.push_back(std::make_unique<net::io_context>(1));  // one thread each
        return v;
    }
    explicit Impl(int io_threads) : contexts(make_contexts(io_threads)), ioc(*contexts[0]) {}
};

Server::Server(ServerConfig cfg, ModelRegistry& models) : impl_(std::make_unique<Impl>(cfg.io_threads)) {
    impl_->st = std::make_shared<ServerState>(std::move(cfg), models);
    ServerState& st = *impl_->st;
    for (const std::string& k : st.cfg.api_keys) st.auth.add(ApiKey{k, {}, false});
    for (const std::string& k : st.cfg.admin_keys) st.auth.add(ApiKey{k, {}, true});
    if (!st.cfg.keys_file.empty()) st.auth.load_file(st.cfg.keys_file);
    if (!st.cfg.limits_file.empty()) st.limits.load_file(st.cfg.limits_file);
    if (!st.cfg.store_path.empty()) st.store = std::make_unique<ResponseStore>(st.cfg.store_path);
}

Server::~Server() {
    stop();
    for (auto& t : impl_->threads)
        if (t.joinable()) t.join();
    // Engines outlive the server: nothing of ours may be called back after this.
    impl_->st->models.drain_all();
}

void Server::start() {
    Impl& im = *impl_;
    ServerState& st = *im.st;
    boost::system::error_code ec;
    auto addr = net::ip::make_address(st.cfg.host, ec);
    if (ec) fail("--host ", st.cfg.host, ": not an IP address");
    tcp::endpoint ep{addr, static_cast<unsigned short>(st.cfg.port)};
    im.acceptor.open(ep.protocol(), ec);
    if (!ec) im.acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) im.acceptor.bind(ep, ec);
    if (!ec) im.acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) fail("cannot listen on ", st.cfg.host, ":", st.cfg.port, ": ", ec.message());
    im.port = im.acceptor.local_endpoint().port();
    net::co_spawn(im.ioc, im.accept_loop(), net::detached);
    if (st.cfg.handle_signals) {
        im.signals.emplace(im.ioc, SIGINT, SIGTERM);
        im.signals->add(SIGHUP);
        im.wait_signals();
    }
    if (!st.cfg.quiet) {
        if (st.auth.open())
            std::fprintf(stderr, "flint: no API key configured: accepting loopback clients only (--api-key to open up)\n");
        std::fprintf(stderr, "flint: stored responses: %s\n",
                     st.store ? st.store->path().c_str() : "in memory (lost at exit)");
    }
}

int Server::port() const { return impl_->port; }

void Server::run() {
    Impl& im = *impl_;
    std::vector<net::executor_work_guard<net::io_context::executor_type>> guards;  // idle is not done: only stop() ends run()
    for (auto& c : im.contexts) guards.push_back(net::make_work_guard(*c));
    for (size_t i = 1; i < im.contexts.size(); ++i) im.threads.emplace_back([&im, i] { im.contexts[i]->run(); });
    im.contexts[0]->run();
    for (auto& t : im.threads)
        if (t.joinable()) t.join();
    im.threads.clear();
}

void Server::stop() { impl_->graceful_stop(); }

}  // namespace flint::server

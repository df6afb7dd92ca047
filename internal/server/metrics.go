package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/runner"
)

// Sources of runs: how a run came to be executed by the server, the
// source label of skein_runs_started_total.
const (
	SourceAPI      = record.SourceAPI      // started, resumed or rerun through the API
	SourceSchedule = record.SourceSchedule // a schedule trigger fired
	SourceTakeover = "takeover"            // taken over from a dead owner on start
	SourceWake     = "wake"                // a waiting run resumed when its wake-up time came
	SourceWebhook  = record.SourceWebhook  // a webhook delivery
	SourceChat     = record.SourceChat     // a chat message
	SourceEditor   = record.SourceEditor   // a draft tried in the web editor
)

type sourceKey struct{}

// withSource marks the executions launched with ctx as coming from src
// (a Source constant); without it they come from SourceAPI.
func withSource(ctx context.Context, src string) context.Context {
	return context.WithValue(ctx, sourceKey{}, src)
}

func sourceOf(ctx context.Context) string {
	if src, ok := ctx.Value(sourceKey{}).(string); ok {
		return src
	}
	return SourceAPI
}

// Metrics are a server's Prometheus metrics, served at GET /metrics. Each
// server has its own registry. The methods are safe for concurrent use;
// labels are workflow and trigger names of served workflows and fixed
// words, so the series stay few.
type Metrics struct {
	reg          *prometheus.Registry
	runsStarted  *prometheus.CounterVec
	runsFinished *prometheus.CounterVec
	nodeDuration *prometheus.HistogramVec
	runsRunning  prometheus.Gauge
	queueDepth   prometheus.Gauge
	fires        *prometheus.CounterVec
	webhooks     *prometheus.CounterVec
	takeovers    *prometheus.CounterVec
}

// NewMetrics makes the metrics, with the Go runtime's and the process's.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		runsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_runs_started_total",
			Help: "Executions the server started: new runs, resumes, reruns and takeovers, by workflow and source (api, schedule, takeover, wake, webhook, chat).",
		}, []string{"workflow", "source"}),
		runsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_runs_finished_total",
			Help: "Executions that ended, by workflow and the run's status (interrupted: left for a resume at shutdown; waiting: parked until a signal or its wake-up time; queued: a webhook's run handed to the queue's workers, which end it).",
		}, []string{"workflow", "status"}),
		nodeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "skein_node_duration_seconds",
			Help:    "How long node steps ran, by node type and status (success, failed, cancelled); reused (cached, pinned) steps and triggers are not counted.",
			Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600},
		}, []string{"type", "status"}),
		runsRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skein_runs_running",
			Help: "Executions the server runs now.",
		}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skein_queue_depth",
			Help: "Executions accepted and not yet started (their run is not recorded yet).",
		}),
		fires: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_schedule_fires_total",
			Help: "Fire times of schedule triggers, by workflow, trigger and outcome (fired, missed, overlap, failed).",
		}, []string{"workflow", "trigger", "outcome"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_webhook_deliveries_total",
			Help: "Webhook deliveries, by workflow, trigger and outcome.",
		}, []string{"workflow", "trigger", "outcome"}),
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skein_takeovers_total",
			Help: "Runs left running by a dead owner that the server found on start, by outcome (resumed, owned: another process took it, failed, not_served).",
		}, []string{"outcome"}),
	}
	m.reg.MustRegister(m.runsStarted, m.runsFinished, m.nodeDuration, m.runsRunning, m.queueDepth, m.fires, m.webhooks, m.takeovers,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// queueJobs exports the jobs of the Postgres queue that have not ended as
// skein_queue_jobs{queue, state}, counted in the database at each scrape:
// the queue depth is its available jobs (waiting for a worker).
type queueJobs struct {
	count func(context.Context) ([]runner.QueueJobs, error)
	desc  *prometheus.Desc
	log   *slog.Logger
}

// queueScrape bounds how long a scrape waits for the count.
const queueScrape = 5 * time.Second

func (q *queueJobs) Describe(ch chan<- *prometheus.Desc) { ch <- q.desc }

func (q *queueJobs) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), queueScrape)
	defer cancel()
	jobs, err := q.count(ctx)
	if err != nil {
		q.log.Warn("counting the queue's jobs for /metrics", "err", err)
		ch <- prometheus.NewInvalidMetric(q.desc, err)
		return
	}
	for _, j := range jobs {
		ch <- prometheus.MustNewConstMetric(q.desc, prometheus.GaugeValue, float64(j.Count), j.Queue, j.State)
	}
}

// watchQueue exports the jobs of the runner's queue (skein_queue_jobs).
func (m *Metrics) watchQueue(count func(context.Context) ([]runner.QueueJobs, error), log *slog.Logger) {
	err := m.reg.Register(&queueJobs{count: count, log: log, desc: prometheus.NewDesc("skein_queue_jobs",
		"Jobs of the Postgres queue that have not ended, by queue and state: available (waiting for a worker: the queue depth), scheduled (due later), retryable, running. Counted in the database at each scrape, when the server's runs go to the queue.",
		[]string{"queue", "state"}, nil)})
	if are := (prometheus.AlreadyRegisteredError{}); err != nil && !errors.As(err, &are) {
		log.Error("exporting the queue's jobs", "err", err)
	}
}

// Gatherer is the registry the metrics are in.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// RunStarted counts an execution that started (its run is recorded).
func (m *Metrics) RunStarted(workflow, source string) {
	m.runsStarted.WithLabelValues(workflow, source).Inc()
}

// RunFinished counts an execution that ended with the run's status.
func (m *Metrics) RunFinished(workflow, status string) {
	m.runsFinished.WithLabelValues(workflow, status).Inc()
}

// NodeFinished observes how long a node step of the given type ran.
func (m *Metrics) NodeFinished(nodeType, status string, d time.Duration) {
	m.nodeDuration.WithLabelValues(nodeType, status).Observe(d.Seconds())
}

// ScheduleFires counts n fire times of a schedule trigger with their
// outcome (schedule.OutcomeFired and the others).
func (m *Metrics) ScheduleFires(workflow, trigger, outcome string, n int) {
	m.fires.WithLabelValues(workflow, trigger, outcome).Add(float64(n))
}

// Webhook counts a webhook delivery to a workflow's trigger with its
// outcome, a word such as accepted, duplicate, unauthorized, expired,
// too_large, bad_request or not_found. Pass "" as the workflow and
// trigger of a delivery to one that is not served, so that requests
// cannot make series at will.
func (m *Metrics) Webhook(workflow, trigger, outcome string) {
	m.webhooks.WithLabelValues(workflow, trigger, outcome).Inc()
}

// Takeover counts a run found abandoned on start, with its outcome.
func (m *Metrics) Takeover(outcome string) {
	m.takeovers.WithLabelValues(outcome).Inc()
}

// Metrics are the server's metrics: the webhook and chat code counts its
// deliveries there.
func (s *Server) Metrics() *Metrics { return s.cfg.Metrics }

// ServeMetrics serves GET /metrics, and nothing else, on ln without a
// token — Prometheus' convention for an address only the scraper reaches
// (skein serve --metrics-addr) — until ctx ends.
func (s *Server) ServeMetrics(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.cfg.Metrics.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
		_ = hs.Close() // a scrape is short and may be lost
		err = <-served
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// metrics serves GET /metrics.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	s.cfg.Metrics.Handler().ServeHTTP(w, r)
	return nil
}

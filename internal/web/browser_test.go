package web_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/server"
	_ "github.com/skeinhq/skein/node/standard"
)

// The browser tests drive Debian's Chromium, headless, through chromedp:
// one browser for the whole package, a fresh browser context (cookies,
// storage) per test, a server per test.

var screenshots = flag.Bool("screenshots", false, "write the pages' screenshots to docs/img")

// theSecret is the value of the secret API_KEY the live workflow uses.
const theSecret = "sk-live-7f3a9c0e51b2d4"

var chrome struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	err    error
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if chrome.cancel != nil {
		chrome.cancel()
	}
	os.Exit(code)
}

// chromiumPath is the browser the tests drive: $SKEIN_CHROMIUM, else
// Debian's chromium on the PATH.
func chromiumPath() string {
	if p := os.Getenv("SKEIN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser returns a new tab, in a browser context of its own, of the
// package's Chromium. Without Chromium the test fails when CI=true
// (make deps installs it) and is skipped otherwise.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("Chromium is not installed: the browser tests need it (make deps installs Debian's chromium; or set SKEIN_CHROMIUM)")
		}
		t.Skip("Chromium is not installed (make deps installs it; CI=true makes this a failure)")
	}
	chrome.once.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox,
			chromedp.Headless,
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-gpu", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.Flag("disable-renderer-backgrounding", true),
			chromedp.Flag("disable-backgrounding-occluded-windows", true),
			chromedp.WindowSize(1440, 900),
		)
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(alloc)
		chrome.ctx = ctx
		chrome.cancel = func() { cancelCtx(); cancelAlloc() }
		chrome.err = chromedp.Do(ctx)
	})
	require.NoError(t, chrome.err, "starting %s", path)
	// At most maxTabs tests drive the browser at once: the others wait
	// their turn here, before their time starts, so that a machine with
	// few cores is not shared by every page of the package at once.
	tabs <- struct{}{}
	t.Cleanup(func() { <-tabs })
	tab, cancel := chromedp.NewContext(chrome.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// Each tab behaves as the focused page: up to maxTabs run at once,
	// and a page the browser does not count focused loses the keyboard
	// focus its test gave (a dialog's button, a list's typed key).
	require.NoError(t, chromedp.Do(tab, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		return err
	})))
	ctx, cancelT := context.WithTimeout(tab, 3*time.Minute)
	t.Cleanup(cancelT)
	return ctx
}

// maxTabs is how many tests may have a tab open at once.
const maxTabs = 4

var tabs = make(chan struct{}, maxTabs)

// site is a skein server of testdata/flows with token authentication.
type site struct {
	t     *testing.T
	url   string
	token string
	r     *runner.Runner
	flows string // the --workflows folder
}

func serve(t *testing.T, extra map[string]string) *site {
	t.Helper()
	flows := t.TempDir()
	ents, err := os.ReadDir("testdata/flows")
	require.NoError(t, err)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join("testdata/flows", e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(flows, e.Name()), data, 0o600))
	}
	for name, text := range extra {
		require.NoError(t, os.WriteFile(filepath.Join(flows, name), []byte(text), 0o600))
	}
	env := func(k string) (string, bool) {
		if k == "API_KEY" || k == "SKEIN_SECRET_API_KEY" {
			return theSecret, true
		}
		return "", false
	}
	r, err := runner.Open(runner.Config{Dir: filepath.Join(t.TempDir(), ".skein"), LookupEnv: env})
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	tok, _, err := r.Tokens().Create(t.Context(), auth.Admin, "browser test")
	require.NoError(t, err)
	srv, err := server.New(server.Config{Runner: r, Workflows: flows, Auth: r.Tokens(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Grace: time.Second})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return &site{t: t, url: "http://" + ln.Addr().String(), token: tok, r: r, flows: flows}
}

// api calls the API with the admin token and decodes the answer.
func (s *site) api(method, path string, body any) map[string]any {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(s.t, err)
		rd = strings.NewReader(string(data))
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+s.token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(s.t, err)
	require.Less(s.t, res.StatusCode, 300, "%s %s: %s", method, path, data)
	var out map[string]any
	require.NoError(s.t, json.Unmarshal(data, &out))
	return out
}

// start starts a run of a workflow through the API and returns its id.
func (s *site) start(workflow string) string {
	s.t.Helper()
	return s.api("POST", "/api/workflows/"+workflow+"/runs", map[string]any{})["execution_id"].(string)
}

// signIn opens the page and signs in with the admin token.
func (s *site) signIn(ctx context.Context) {
	s.t.Helper()
	do(s.t, ctx,
		chromedp.Navigate(s.url+"/"),
		chromedp.WaitVisible("#token"),
		chromedp.SendKeys("#token", s.token),
		chromedp.Click(`form button[type="submit"]`),
		chromedp.WaitVisible("header.top nav"),
	)
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	require.NoError(t, err, "evaluating %s", js)
	return v
}

// until waits for a JavaScript condition to hold in the page.
func until(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(60*time.Second)))
	require.NoError(t, err, "waiting for %s", js)
}

// pressUntil presses keys (steps) until js holds in the page, giving each
// press a few seconds to show before pressing again: on a loaded machine
// a key can reach an element before it takes keys (an effect that gives it
// the focus has not run), and is lost. Every few presses that do not
// take, the tab is brought to the front (the browser routes keys to its
// active tab, which another test's new tab may have become) and a select
// whose own list is open has it closed (Escape, to the list), so that the
// next key reaches the page. Once js holds, nothing more is pressed. When
// js never holds, it fails saying where the focus was.
func pressUntil(t *testing.T, ctx context.Context, js string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	for i := range 20 {
		if i > 0 && i%4 == 0 {
			unstick(t, ctx)
		}
		do(t, ctx, steps...)
		if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(3*time.Second))); err == nil {
			return
		}
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("%s never held after 20 presses: %v; %s", js, err, focusState(t, ctx))
	}
}

// openSelect finds a select whose own list is open (:open), where a
// browser that knows the selector says so.
const openSelect = `(() => { try { return !!document.querySelector("select:open"); } catch { return false; } })()`

// unstick brings the test's tab to the front and closes an open select's
// list, for keys that do not reach the page.
func unstick(t *testing.T, ctx context.Context) {
	t.Helper()
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.BringToFront, cdp.Empty{})
		return err
	}))
	if eval[bool](t, ctx, openSelect) {
		do(t, ctx, chromedp.KeyEvent(kb.Escape))
	}
}

// focusState says where the page's focus is, for a failure.
func focusState(t *testing.T, ctx context.Context) string {
	t.Helper()
	return eval[string](t, ctx, `(() => {
		const a = document.activeElement, sel = document.querySelector("select");
		return "the focus on " + (a ? a.tagName.toLowerCase() + (a.id ? "#" + a.id : "") : "nothing") +
			"; the page focused " + document.hasFocus() + ", " + document.visibilityState +
			(sel ? "; select#" + sel.id + " = " + JSON.stringify(sel.value) + ", its list open " + `+openSelect+` : "");
	})()`)
}

// pressEnter and pressSpace press the key as a keyboard does: a keyDown
// that carries its text, so that a page that prevents the keydown's
// default gets no keypress of it. chromedp.KeyEvent sends the text as a
// separate char event, which no handler can prevent, and which reaches
// whatever has the focus by then: a line break in a box that sends on
// Enter; on a handle that opens the connect picker, a key that opens the
// picker's select's own list, which then takes every key after it.
func pressEnter() chromedp.Action[chromedp.Void] { return pressKey("Enter", "Enter", 13, "\r") }

func pressSpace() chromedp.Action[chromedp.Void] { return pressKey(" ", "Space", 32, " ") }

// pressKey presses the key named name (KeyboardEvent.key) at code
// (KeyboardEvent.code), virtual key code vk, that types text.
func pressKey(name, code string, vk int64, text string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tab *chromedp.Target) error {
		key := input.DispatchKeyEventParams{Key: name, Code: code, WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk}
		down := key
		down.Type, down.Text, down.UnmodifiedText = input.DispatchKeyEventTypeKeyDown, text, text
		if _, err := cdp.Call(ctx, tab, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		key.Type = input.DispatchKeyEventTypeKeyUp
		_, err := cdp.Call(ctx, tab, input.DispatchKeyEvent, key)
		return err
	})
}

// screenshot takes a PNG of the page and, with -screenshots, writes it
// to docs/img.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.Greater(t, len(png), 1000, "a screenshot of %s", name)
	if *screenshots {
		dir := filepath.Join("..", "..", "docs", "img")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
	}
}

// axe runs axe-core (web/node_modules, make deps) on the page and fails
// on serious and critical violations.
func axe(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "web", "node_modules", "axe-core", "axe.min.js"))
	require.NoError(t, err, "axe-core is not installed: run make deps (npm ci --prefix web)")
	_, err = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](string(src)))
	require.NoError(t, err)
	type violation struct {
		ID     string `json:"id"`
		Impact string `json:"impact"`
		Help   string `json:"help"`
		Nodes  []struct {
			Target []any `json:"target"`
		} `json:"nodes"`
	}
	vs := eval[[]violation](t, ctx, `axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations)`)
	var bad []string
	for _, v := range vs {
		if v.Impact == "serious" || v.Impact == "critical" {
			targets := []string{}
			for _, n := range v.Nodes {
				targets = append(targets, fmt.Sprint(n.Target...))
			}
			bad = append(bad, fmt.Sprintf("%s (%s): %s at %s", v.ID, v.Impact, v.Help, strings.Join(targets, ", ")))
		}
	}
	require.Empty(t, bad, "axe-core finds serious or critical violations on the %s", page)
}

// tabStops presses Tab up to n times and returns a description of each
// element that took the focus: its data-node, else its text or label.
func tabStops(t *testing.T, ctx context.Context, n int) []string {
	t.Helper()
	eval[chromedp.Void](t, ctx, `document.activeElement && document.activeElement.blur()`)
	var stops []string
	for range n {
		do(t, ctx, chromedp.KeyEvent("\t"))
		stops = append(stops, eval[string](t, ctx, `(() => {
			const e = document.activeElement;
			if (!e || e === document.body) return "";
			if (e.dataset && e.dataset.node) return "node:" + e.dataset.node;
			return e.tagName.toLowerCase() + ":" + (e.getAttribute("aria-label") || e.textContent || e.name || "").trim().slice(0, 40);
		})()`))
	}
	return stops
}

// fill sets the value of a form field as typing would, and tells the page
// (an input event, and a change event for a select).
func fill(t *testing.T, ctx context.Context, sel, value string) {
	t.Helper()
	q, _ := json.Marshal(sel)
	v, _ := json.Marshal(value)
	eval[chromedp.Void](t, ctx, fmt.Sprintf(`(() => {
		const e = document.querySelector(%s);
		e.focus();
		e.value = %s;
		e.dispatchEvent(new Event("input", {bubbles: true}));
		e.dispatchEvent(new Event("change", {bubbles: true}));
	})()`, q, v))
}

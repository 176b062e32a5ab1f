package reports

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// overlapsJS lists the report's blocks (tables, charts, sections,
// headings, paragraphs) whose boxes overlap though neither holds the
// other, and the result cells that end outside their section: what a
// reader would see as one table printed over another.
const overlapsJS = `(() => {
  const els = [...document.querySelectorAll('main table, main figure, main section, main h2, main h3, main p, main pre, main .legend')]
    .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; });
  const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + ' "' + e.textContent.trim().slice(0, 40) + '"';
  const bad = [];
  for (let i = 0; i < els.length; i++) for (let j = i + 1; j < els.length; j++) {
    const a = els[i], b = els[j];
    if (a.contains(b) || b.contains(a)) continue;
    const r = a.getBoundingClientRect(), s = b.getBoundingClientRect();
    const ox = Math.min(r.right, s.right) - Math.max(r.left, s.left);
    const oy = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
    if (ox > 1 && oy > 1) bad.push(name(a) + ' overlaps ' + name(b));
  }
  for (const td of document.querySelectorAll('td.res')) {
    const box = (td.closest('section') || document.querySelector('main')).getBoundingClientRect();
    if (td.getBoundingClientRect().right > box.right + 1) bad.push('result cell ' + name(td) + ' ends outside its section');
  }
  return bad.slice(0, 20);
})()`

// TestIntegration_ReportLayoutInChromium opens a report in headless
// Chromium at a laptop's and a desktop's width and measures every block's
// box: none may cover another, and every hypothesis's result stays
// inside its section (the settings table once covered the Result column).
func TestIntegration_ReportLayoutInChromium(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium (Debian's chromium; scripts/setup.sh installs it)")
	}
	r := testReport(t)
	dir := t.TempDir()
	require.NoError(t, Write(r, dir))
	page := "file://" + filepath.Join(dir, "index.html")
	for _, w := range []int{1280, 1920} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		actx, acancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(w, 1000))...)
		bctx, bcancel := chromedp.NewContext(actx)
		err := chromedp.Do(bctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#verdict")))
		require.NoError(t, err, "width %d", w)
		bad, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](overlapsJS))
		require.NoError(t, err, "width %d", w)
		shot, _ := chromedp.Run(bctx, chromedp.FullScreenshot(60))
		bcancel()
		acancel()
		cancel()
		if d := os.Getenv("CHAOSLAB_SHOTS"); d != "" { // to look at it
			_ = os.WriteFile(filepath.Join(d, fmt.Sprintf("report-%d.jpg", w)), shot, 0o644)
		}
		if len(bad) > 0 {
			out := filepath.Join(t.TempDir(), "report.jpg")
			_ = os.WriteFile(out, shot, 0o644)
			t.Fatalf("at %d px (screenshot %s):\n%v", w, out, bad)
		}
	}
}

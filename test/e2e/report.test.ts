import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Locator } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ganttSvg } from '../../src/report/charts.js';
import { histogramSvg } from '../../src/report/histogram.js';
import type { BatchAttempt } from '../../src/store/task-store.js';
import { ROOT, runCli } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';
import { chromiumPath, missing } from '../helpers/services.js';

const CHROMIUM = missing('chromium', 'the report tests in a browser') ? null : chromiumPath()!;
const ARTIFACTS = join(ROOT, 'test-artifacts');

/** A file name that is markup; the report must show it as text. */
const HOSTILE_KEY = '<img src=x onerror=alert(1)>';
const HOSTILE_ERROR = '<b onmouseover=alert(3)>boom</b>';

/**
 * A batch with a success, a retry that succeeds, a timeout and a permanent failure: 6 attempts;
 * with `hostile`, also a task named HOSTILE_KEY failing with HOSTILE_ERROR: 7.
 */
async function mixedBatch(hostile = false) {
  const p = projectWithFiles(4);
  if (hostile) writeFileSync(join(p.src, HOSTILE_KEY), 'x\n');
  const exec = `case {key} in f001.log) [ {attempt} -ge 2 ] || { echo "flaky 42" >&2; exit 1; };; f002.log) sleep 5;; f003.log) echo "bad input /x/3" >&2; exit 64;; *onerror*) echo '${HOSTILE_ERROR}' >&2; exit 64;; esac`;
  const r = await runCli(['run', 'src', '--exec', exec, '--timeout', '1s', '--retries', '1', '--backoff', '200ms', '--jitter', '0', '--permanent-codes', '64', '-j', '2'], {
    cwd: p.dir,
  });
  expect(r.code).toBe(1);
  return p;
}

describe('show and report on a batch with retries, a timeout and a permanent failure', () => {
  it('show lists every attempt in order with the right outcomes and gaps', async () => {
    const p = await mixedBatch();
    const show = async (key: string) => JSON.parse((await runCli(['show', key, '--json'], { cwd: p.dir })).stdout);
    const outcomes = async (key: string) => (await show(key)).attempts.map((a: { outcome: string }) => a.outcome);
    expect(await outcomes('f000.log')).toEqual(['SUCCESS']);
    expect(await outcomes('f001.log')).toEqual(['FAILED', 'SUCCESS']);
    expect(await outcomes('f002.log')).toEqual(['TIMEOUT', 'TIMEOUT']);
    expect(await outcomes('f003.log')).toEqual(['FAILED']);
    const flaky = await show('f001.log');
    expect(Date.parse(flaky.attempts[1].startedAt) - Date.parse(flaky.attempts[0].endedAt)).toBeGreaterThanOrEqual(200);
    expect(flaky.attempts[0].error).toBe('exit code 1: flaky 42');
    const human = await runCli(['show', 'f001.log'], { cwd: p.dir });
    expect(human.stdout).toMatch(/#1 .* FAILED [^\n]*\n(?: {4}[^\n]*\n)+#2 .* SUCCESS .*\(after \d+ms\)/);
  });

  it.runIf(CHROMIUM !== null)('report renders in Chromium: bars, labelled axes, linked failures, hostile text inert, no network', async () => {
    const p = await mixedBatch(true);
    const file = join(p.dir, 'report.html');
    const r = await runCli(['report', '--html', file], { cwd: p.dir });
    expect(r.code, r.stderr).toBe(0);
    const html = readFileSync(file, 'utf8');
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<b onmouseover');
    const browser = await launch();
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
      const errors: string[] = [];
      const requests: string[] = [];
      const dialogs: string[] = [];
      page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      page.on('pageerror', (e) => errors.push(String(e)));
      page.on('request', (req) => requests.push(req.url()));
      page.on('dialog', (d) => void (dialogs.push(d.message()), d.dismiss()));
      await page.goto(pathToFileURL(file).href);
      expect(await page.locator('svg.gantt rect.bar').count()).toBe(7);
      expect(await page.locator('svg.gantt rect.bar[data-outcome="TIMEOUT"]').count()).toBe(2);

      // The histogram: every finished attempt in a bar, each bar labelled with its range, a count axis.
      const bars = page.locator('svg.histogram rect.hist');
      const counts = (await bars.evaluateAll((rs) => rs.map((r) => r.getAttribute('data-count')))).map(Number);
      expect(counts.reduce((a, b) => a + b, 0)).toBe(7);
      const bucketLabels = await page.locator('svg.histogram text.bucket').allTextContents();
      expect(bucketLabels).toHaveLength(counts.length);
      for (const l of bucketLabels) expect(l).toMatch(/^\d+(\.\d+)?–\d+(\.\d+)? (ms|s|min|h|d)$/);
      const countTicks = (await page.locator('svg.histogram text.count').allTextContents()).map(Number);
      expect(countTicks[0]).toBe(0);
      expect(countTicks.length).toBeGreaterThanOrEqual(2);
      expect(countTicks.at(-1)).toBeGreaterThanOrEqual(Math.max(...counts));
      await expectTextInside(page.locator('svg.histogram'));
      await expectTextInside(page.locator('svg.gantt'));

      // A cluster links to its list of tasks, and each key to the task's section with its error.
      expect(await page.getByText('bad input /x/3').count()).toBeGreaterThan(0);
      const badRow = page.locator('tr', { hasText: 'bad input /x/3' }).first();
      await badRow.locator('a.cluster-link').click();
      const list = page.locator('section.cluster:target');
      await expect.poll(() => list.count()).toBe(1);
      expect(await list.locator('a.task-link').allTextContents()).toEqual(['f003.log']);
      await badRow.locator('a.task-link', { hasText: 'f003.log' }).click();
      expect(new URL(page.url()).hash).toMatch(/^#task-\d+$/);
      const task = page.locator('section.task:target');
      await expect.poll(() => task.count()).toBe(1);
      expect(await task.locator('h3').textContent()).toBe('f003.log');
      expect(await task.locator('.error').textContent()).toContain('bad input /x/3');
      expect(await task.isVisible()).toBe(true);

      // The hostile key and error: a link like any other, shown as text, nothing run or fetched.
      const hostileRow = page.locator('tr', { hasText: HOSTILE_ERROR }).first();
      await hostileRow.locator('a.task-link').click();
      const hostile = page.locator('section.task:target');
      await expect.poll(() => hostile.count()).toBe(1);
      expect(await hostile.locator('h3').textContent()).toBe(HOSTILE_KEY);
      expect(await hostile.locator('.error').textContent()).toContain(HOSTILE_ERROR);
      expect(await page.locator('img, b[onmouseover]').count()).toBe(0);

      await page.evaluate(() => window.scrollTo(0, 0));
      expect(dialogs).toEqual([]);
      expect(errors).toEqual([]);
      expect(requests.filter((u) => !u.startsWith('file:'))).toEqual([]);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'report.png'), fullPage: true });
    } finally {
      await browser.close();
    }
  });

  it.runIf(CHROMIUM !== null)('axis labels stay inside their charts for spans from 1 ms to 300 days', async () => {
    const browser = await launch();
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
      for (const span of [1, 37, 1500, 59_000, 90_000, 3 * 3600_000, 30 * 3600_000, 300 * 86_400_000]) {
        const t0 = Date.UTC(2026, 0, 1);
        const attempts = [attempt('w-1', t0, t0 + span / 3), attempt('a-much-longer-worker-name-2', t0 + span / 2, t0 + span)];
        await page.setContent(`<!doctype html><style>svg text{font-size:11px}</style><body>${ganttSvg(attempts, t0 + span)}${histogramSvg(attempts)}</body>`);
        await expectTextInside(page.locator('svg.gantt'), `span ${span} ms`);
        await expectTextInside(page.locator('svg.histogram'), `span ${span} ms`);
        const ticks = await page.locator('svg.gantt text.tick').allTextContents();
        expect(new Set(ticks).size, `span ${span} ms: ${ticks.join(' ')}`).toBe(5);
      }
    } finally {
      await browser.close();
    }
  });
});

function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM!, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
}

/** Every label of the chart lies within the chart's box: none is cut off by its viewBox. */
async function expectTextInside(svg: Locator, context = ''): Promise<void> {
  const box = (await svg.boundingBox())!;
  const texts = svg.locator('text');
  expect(await texts.count()).toBeGreaterThan(0);
  for (const t of await texts.all()) {
    const b = (await t.boundingBox())!;
    const where = `${context} "${await t.textContent()}" at ${JSON.stringify(b)} in ${JSON.stringify(box)}`;
    expect(b.x, where).toBeGreaterThanOrEqual(box.x - 0.5);
    expect(b.y, where).toBeGreaterThanOrEqual(box.y - 0.5);
    expect(b.x + b.width, where).toBeLessThanOrEqual(box.x + box.width + 0.5);
    expect(b.y + b.height, where).toBeLessThanOrEqual(box.y + box.height + 0.5);
  }
}

function attempt(workerId: string, startedAt: number, endedAt: number): BatchAttempt {
  return {
    id: startedAt,
    key: `k-${workerId}`,
    attempt: 1,
    workerId,
    host: 'h',
    owner: 'run-1',
    pid: 1,
    startedAt,
    endedAt,
    outcome: 'SUCCESS',
    exitCode: 0,
    signal: null,
    error: null,
    durationMs: endedAt - startedAt,
    outputTail: null,
    logPath: null,
    jobVersion: null,
  };
}

import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli } from '../helpers/cli.js';
import { projectWithFiles } from '../helpers/project.js';

const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, 'test-artifacts');

/** A batch with a success, a retry that succeeds, a timeout and a permanent failure: 6 attempts. */
async function mixedBatch() {
  const p = projectWithFiles(4);
  const exec = 'case {key} in f001.log) [ {attempt} -ge 2 ] || { echo "flaky 42" >&2; exit 1; };; f002.log) sleep 5;; f003.log) echo "bad input /x/3" >&2; exit 64;; esac';
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
    expect(human.stdout).toMatch(/#1 .* FAILED [^\n]*\n(?:    [^\n]*\n)+#2 .* SUCCESS .*\(after \d+ms\)/);
  });

  it.runIf(existsSync(CHROMIUM))('report renders in Chromium: one bar per attempt, no console errors, no network', async () => {
    const p = await mixedBatch();
    const file = join(p.dir, 'report.html');
    const r = await runCli(['report', '--html', file], { cwd: p.dir });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).not.toMatch(/https?:\/\//);
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
      const errors: string[] = [];
      const requests: string[] = [];
      page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      page.on('pageerror', (e) => errors.push(String(e)));
      page.on('request', (req) => requests.push(req.url()));
      await page.goto(pathToFileURL(file).href);
      expect(await page.locator('svg.gantt rect.bar').count()).toBe(6);
      expect(await page.locator('svg.gantt rect.bar[data-outcome="TIMEOUT"]').count()).toBe(2);
      expect(await page.locator('svg.histogram rect.hist').count()).toBe(20);
      expect(await page.getByText('bad input /x/3').count()).toBeGreaterThan(0);
      expect(errors).toEqual([]);
      expect(requests.filter((u) => !u.startsWith('file:'))).toEqual([]);
      mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'report.png'), fullPage: true });
    } finally {
      await browser.close();
    }
  });
});

import type { JobSettings } from '../job/job-definition.js';
import { policyFor } from '../job/stages.js';
import type { RetryRules } from './settlement.js';

/** Each stage's retry rules ('' for a batch without stages), worked out once. */
export function rulesOf(settings: JobSettings): (stage: string) => RetryRules {
  const rules = new Map<string, RetryRules>();
  for (const stage of settings.stages.length ? settings.stages.map((s) => s.name) : ['']) {
    const p = policyFor(settings, stage);
    rules.set(stage, {
      policy: { backoffMs: p.backoffMs, factor: p.backoffFactor, maxBackoffMs: p.maxBackoffMs, jitter: p.jitter },
      permanentCodes: p.permanentCodes,
      timeoutMs: p.timeoutMs,
      // Compiled once here: validated when given, so a stored one compiles.
      permanentErrors: p.permanentErrors.map((source) => new RegExp(source)),
      heartbeatTimeoutMs: p.heartbeatTimeoutMs,
      retryQuiet: p.retryQuiet,
      busyCodes: settings.busyCodes,
      maxBusyMs: settings.maxBusyMs,
    });
  }
  return (stage) => rules.get(stage) ?? rules.values().next().value!;
}

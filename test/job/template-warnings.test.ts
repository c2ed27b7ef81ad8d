import { describe, expect, it } from 'vitest';
import { templateWarnings } from '../../src/job/template-warnings.js';

// Audit 4, item 20: a template whose only placeholders are a record's fields or a stage's
// inputs names its task, so it is not warned to have "no placeholder".
describe('templateWarnings', () => {
  it('warns about a template with no placeholder at all', () => {
    expect(templateWarnings('wc -l', 'items', '--exec')).toEqual([expect.stringContaining('has no placeholder')]);
  });

  it.each(['notify --to {item.email}', 'gzip -c {inputs.fetch.out}', 'echo {1}', 'echo {item}'])('says nothing about %s', (template) => {
    expect(templateWarnings(template, 'items', '--exec')).toEqual([]);
  });
});

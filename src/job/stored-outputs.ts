import type { JobSettings } from './job-definition.js';

/**
 * A batch keeps where its declared outputs go. A job file's output is rendered relative to
 * the file's folder, and that folder is stored with the template as its `base`; a batch that
 * an older version created from a job file stored the working folder instead. When the job
 * file gives the batch's stored template again, the stored base is kept: such a batch resumes
 * writing where it wrote, and the outputs it placed stay up to date. A new template (or
 * `--output` on the command line, relative to the working folder as ever) is a change, and is
 * said as one.
 */
export function keepStoredOutputs(fromFile: Partial<JobSettings>, stored: JobSettings): Partial<JobSettings> {
  const output = fromFile.output && stored.output?.template === fromFile.output.template ? stored.output : fromFile.output;
  const stages = fromFile.stages?.map((s) => {
    const old = stored.stages.find((o) => o.name === s.name)?.output;
    return s.output && old?.template === s.output.template ? { ...s, output: old } : s;
  });
  return { ...fromFile, ...(output ? { output } : {}), ...(stages ? { stages } : {}) };
}

import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OomKills, oomCounterFile } from '../../src/coordinator/oom-kills.js';
import { tempDir } from '../helpers/cli.js';

/** A counter file in the kernel's format, set to `n` kills. */
function counter(dir: string, name = 'memory.events') {
  const file = join(dir, name);
  const set = (n: number) => writeFileSync(file, `low 0\nhigh 0\nmax 4\noom 2\noom_kill ${n}\noom_group_kill 0\n`);
  return { file, set };
}

describe('oomCounterFile', () => {
  it('the memory cgroup of /proc/self/cgroup: v2 memory.events, v1 memory.oom_control, else /proc/vmstat', () => {
    const root = tempDir();
    const procCgroup = join(root, 'cgroup');
    mkdirSync(join(root, 'run/app'), { recursive: true });
    counter(join(root, 'run/app')).set(0);
    writeFileSync(procCgroup, '0::/run/app\n');
    expect(oomCounterFile(procCgroup, root)).toBe(join(root, 'run/app/memory.events'));

    mkdirSync(join(root, 'memory/svc'), { recursive: true });
    counter(join(root, 'memory/svc'), 'memory.oom_control').set(0);
    writeFileSync(procCgroup, '9:pids:/\n4:memory:/svc\n0::/elsewhere\n');
    expect(oomCounterFile(procCgroup, root)).toBe(join(root, 'memory/svc/memory.oom_control'));

    writeFileSync(procCgroup, '0::/\n');
    expect(oomCounterFile(procCgroup, root)).toBe('/proc/vmstat');
    expect(oomCounterFile(join(root, 'missing'), root)).toBe('/proc/vmstat');
  });
});

describe('OomKills', () => {
  it('puts each kill the count gained to one SIGKILLed ending, none to more', () => {
    const c = counter(tempDir());
    c.set(3); // before the run: not ours
    const kills = new OomKills(c.file);
    expect(kills.claim()).toBe(false); // a kill -9
    c.set(5); // two victims of one squeeze
    expect(kills.claim()).toBe(true);
    expect(kills.claim()).toBe(true);
    expect(kills.claim()).toBe(false);
  });

  it('forgets a kill no ending took by the look after the one that saw it', () => {
    const c = counter(tempDir());
    c.set(0);
    const kills = new OomKills(c.file);
    c.set(1); // a process of the cgroup that is not ours
    kills.forgetOld(); // sees it
    kills.forgetOld(); // forgets it
    expect(kills.claim()).toBe(false);
    c.set(2);
    kills.forgetOld(); // a kill whose ending comes before the next look is still found
    expect(kills.claim()).toBe(true);
  });

  it('without a counter, never an OOM kill', () => {
    const kills = new OomKills(join(tempDir(), 'none'));
    expect(kills.claim()).toBe(false);
    kills.forgetOld();
    expect(kills.claim()).toBe(false);
  });
});

/**
 * Scanner exports into a watched folder, for the new-folder stress tests: a plan of folders and
 * files (new case folders, nested ones, finished folders renamed into place, with and without
 * pauses), written by a process of its own (scan-writer.mjs), and busy processes that load the CPU.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import path from 'node:path';

export type WriterStep = ['mkdir', string] | ['write', string, number] | ['pause', number] | ['rename', string, string, string[]];

/** How a round brings its files into the watched folder. */
export const ROUND_KINDS = ['new folder', 'nested new folders', 'nested one by one', 'renamed from outside', 'renamed from a temp folder inside', 'new folder in an old one'] as const;
export type RoundKind = (typeof ROUND_KINDS)[number];

export interface RoundPlan {
  kind: RoundKind;
  paused: boolean;
  steps: WriterStep[];
  /** The files the round leaves in the watched folder, relative to it with posix separators. */
  files: string[];
}

/** A small seeded generator (mulberry32): a failing round can be planned again from its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Round `round` of a stress run: a new case folder (named after the round) that receives 1 to
 * `maxFiles` files as fast as they can be written, or with short pauses now and then.
 */
export function planRound(options: { root: string; staging: string; round: number; kind: RoundKind; paused: boolean; random: () => number; maxFiles?: number }): RoundPlan {
  const { root, staging, round, kind, paused, random } = options;
  // Few files more often than many (an intraoral scan is a handful, a CBCT series hundreds).
  const count = 1 + Math.floor(random() ** 2 * (options.maxFiles ?? 300));
  const steps: WriterStep[] = [];
  const files: string[] = [];
  const at = (relative: string) => path.join(root, ...relative.split('/'));
  const name = `case-${String(round).padStart(4, '0')}`;
  /** Writes `n` files for `folder` (relative: where they end up) into `writtenIn`, pausing now and then in a paused round. */
  const writeInto = (folder: string, n: number, writtenIn = at(folder)) => {
    for (let index = 0; index < n; index++) {
      const file = `IM${String(files.length).padStart(4, '0')}.dcm`;
      steps.push(['write', path.join(writtenIn, file), 1 + Math.floor(random() * 2048)]);
      files.push(`${folder}/${file}`);
      if (paused && random() < 0.05) steps.push(['pause', 1 + Math.floor(random() * 20)]);
    }
  };
  const split = (n: number, parts: number) => {
    const sizes: number[] = [];
    let left = n;
    for (let part = parts; part > 1; part--) {
      const size = Math.floor(random() * (left + 1));
      sizes.push(size);
      left -= size;
    }
    return [...sizes, left];
  };
  switch (kind) {
    case 'new folder':
      steps.push(['mkdir', at(name)]);
      writeInto(name, count);
      break;
    case 'nested new folders': {
      steps.push(['mkdir', at(`${name}/study/series`)]);
      const [deep, middle] = split(count - 1, 2) as [number, number];
      writeInto(`${name}/study/series`, deep + 1);
      writeInto(`${name}/study`, middle);
      break;
    }
    case 'nested one by one': {
      const [first, second, third] = split(count - 1, 3) as [number, number, number];
      steps.push(['mkdir', at(name)]);
      writeInto(name, first);
      steps.push(['mkdir', at(`${name}/study`)]);
      writeInto(`${name}/study`, second);
      steps.push(['mkdir', at(`${name}/study/series`)]);
      writeInto(`${name}/study/series`, third + 1);
      break;
    }
    case 'renamed from outside':
    case 'renamed from a temp folder inside': {
      // The scanner finishes the case in a temp folder, moves it into place, and sometimes adds a
      // file or a sub-folder straight after (a report, a second series).
      const temp = kind === 'renamed from outside' ? path.join(staging, name) : at(`.${name}.partial`);
      const [inside, nested, after] = split(count - 1, 3) as [number, number, number];
      steps.push(['mkdir', path.join(temp, 'series')]);
      writeInto(name, inside + 1, temp);
      writeInto(`${name}/series`, nested, path.join(temp, 'series'));
      steps.push(['rename', temp, at(name), files.map(at)]);
      if (after > 0 && random() < 0.5) {
        steps.push(['mkdir', at(`${name}/report`)]);
        writeInto(`${name}/report`, after);
      }
      break;
    }
    case 'new folder in an old one': {
      const old = `case-${String(Math.max(0, round - 1 - Math.floor(random() * 8))).padStart(4, '0')}`;
      steps.push(['mkdir', at(`${old}/more-${round}`)]);
      writeInto(`${old}/more-${round}`, count);
      break;
    }
  }
  return { kind, paused, steps, files };
}

/** The writer process: runs a plan's steps, answers when each file appeared (absolute path → ms). */
export class ScanWriter {
  private constructor(private readonly child: ChildProcess) {}
  private nextId = 0;

  static start(): ScanWriter {
    return new ScanWriter(fork(path.join(import.meta.dirname, 'scan-writer.mjs'), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  }

  run(steps: readonly WriterStep[]): Promise<Map<string, number>> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const onMessage = (message: { id: number; appeared?: Array<[string, number]>; error?: string }) => {
        if (message.id !== id) return;
        this.child.off('message', onMessage);
        this.child.off('exit', onExit);
        if (message.error !== undefined) reject(new Error(message.error));
        else resolve(new Map(message.appeared));
      };
      const onExit = (code: number | null) => reject(new Error(`the scan writer exited (${code})`));
      this.child.on('message', onMessage);
      this.child.once('exit', onExit);
      this.child.send({ id, steps });
    });
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.disconnect();
    await exited;
  }
}

/** The files of a round in the order written, with when each appeared at its final path. */
export interface Written {
  round: number;
  plan: RoundPlan;
  files: Array<{ relativePath: string; appearedAt: number }>;
}

/**
 * Plans and writes round `round` of a run with `seed` (kind and pauses taken in turn), with when
 * each file appeared.
 */
export async function writeRound(options: { writer: ScanWriter; folder: string; staging: string; round: number; seed: number; maxFiles?: number }): Promise<Written> {
  const { writer, folder, staging, round, seed, maxFiles } = options;
  const plan = planRound({
    root: folder,
    staging,
    round,
    kind: ROUND_KINDS[round % ROUND_KINDS.length]!,
    paused: Math.floor(round / ROUND_KINDS.length) % 2 === 1,
    random: seededRandom(seed + round),
    ...(maxFiles === undefined ? {} : { maxFiles }),
  });
  const appeared = await writer.run(plan.steps);
  const files = plan.files.map((relativePath) => {
    const appearedAt = appeared.get(path.join(folder, ...relativePath.split('/')));
    if (appearedAt === undefined) throw new Error(`round ${round}: the writer did not write ${relativePath}`);
    return { relativePath, appearedAt };
  });
  return { round, plan, files };
}

/** One busy process per core, as a machine busy with other work: stop() ends them. */
export function loadEveryCore(): { stop(): Promise<void> } {
  const busy = Array.from({ length: availableParallelism() }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  return {
    async stop() {
      await Promise.all(
        busy.map(
          (child) =>
            new Promise<void>((resolve) => {
              if (child.exitCode !== null || child.signalCode !== null) return resolve();
              child.once('exit', () => resolve());
              child.kill();
            }),
        ),
      );
    },
  };
}

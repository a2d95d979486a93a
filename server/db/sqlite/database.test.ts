import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openSqlite } from './database.js';
import { SQLITE_MIGRATIONS } from './store.js';

describe('updating the database at start', () => {
  const directories: string[] = [];
  afterEach(() => {
    vi.restoreAllMocks();
    for (const directory of directories.splice(0)) fs.rmSync(directory, { recursive: true, force: true });
  });

  it('says it is updating an existing database (so IT does not take a long update for a hang), and says nothing on a first start', () => {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'patient-docs-migrate-'));
    directories.push(directory);
    const file = path.join(directory, 'patient-docs.sqlite');
    const lines: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    openSqlite(file, SQLITE_MIGRATIONS.slice(0, 2)).close();
    expect(lines).toEqual([]);
    openSqlite(file, SQLITE_MIGRATIONS).close();
    expect(lines).toEqual([expect.stringMatching(new RegExp(`^patient-docs: updating the database .*patient-docs\\.sqlite to this version \\(${SQLITE_MIGRATIONS.length - 2} change\\(s\\)\\); .*stopping now loses nothing\\n$`))]);
    openSqlite(file, SQLITE_MIGRATIONS).close();
    expect(lines).toHaveLength(1);
  });
});

/**
 * The embedded database may be opened by one process at a time. The lock is a file holding the
 * owner's pid, created exclusively; a lock left by a process that no longer runs (killed, crashed) is
 * taken over, so a kill -9 never leaves the install unusable.
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export class EmbeddedLockError extends Error {
  constructor(
    readonly lockFile: string,
    readonly ownerPid: number,
  ) {
    super(
      `The embedded database in ${path.dirname(lockFile)} is in use by process ${ownerPid}. ` +
        'Stop that process first (the CLI cannot run beside a running embedded server), ' +
        `or use DATABASE_URL for several processes. If no such process runs, delete ${lockFile}.`,
    );
    this.name = 'EmbeddedLockError';
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock of `dataDir` and returns the function that releases it. */
export function acquireEmbeddedLock(dataDir: string): () => void {
  const lockFile = path.join(dataDir, 'switchboard.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockFile, JSON.stringify({ pid: process.pid, started_at: new Date().toISOString() }), {
        flag: 'wx',
      });
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        process.off('exit', release);
        try {
          if (JSON.parse(readFileSync(lockFile, 'utf8')).pid === process.pid) unlinkSync(lockFile);
        } catch {
          // Already gone: nothing to release.
        }
      };
      process.on('exit', release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const ownerPid = readOwner(lockFile);
      if (ownerPid !== undefined && ownerPid !== process.pid && isRunning(ownerPid)) {
        throw new EmbeddedLockError(lockFile, ownerPid);
      }
      unlinkSync(lockFile); // stale: its process is gone
    }
  }
  throw new Error(`Could not take the lock ${lockFile}`);
}

function readOwner(lockFile: string): number | undefined {
  try {
    const pid = JSON.parse(readFileSync(lockFile, 'utf8')).pid;
    return Number.isInteger(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

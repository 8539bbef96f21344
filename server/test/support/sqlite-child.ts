// SPDX-License-Identifier: MIT
// A second process on the SQLite store's file, for sqlite.test.ts (run with `node --import tsx`):
//   insert-and-die <file> <record.json>  insert through the store, then SIGKILL itself as soon as insert resolves
//   hold-lock <file> <ms>                 hold the write lock for <ms>, printing 'locked' once it has it
//   count <file>                          print the store's counts (busy timeout 0: it must not wait)
//   read-loop <file> <ms>                 read for <ms> with busy timeout 0 while another process writes, and print
//                                         { reads, errors, queuedSeen } (queued counts in the order read)
import Database from 'better-sqlite3';
import { SqliteJobStore } from '../../src/store/sqlite.js';
import type { JobRecord } from '../../src/store/store.js';

const [mode, file, arg] = process.argv.slice(2);
if (file === undefined) throw new Error('usage: sqlite-child.ts <mode> <file> [arg]');

if (mode === 'insert-and-die') {
  const store = SqliteJobStore.open(file);
  await store.insert(JSON.parse(arg!) as JobRecord);
  process.kill(process.pid, 'SIGKILL'); // no close, no exit handlers: a crash right after the 202
} else if (mode === 'hold-lock') {
  const db = new Database(file);
  db.exec('BEGIN IMMEDIATE');
  console.log('locked');
  await new Promise((resolve) => setTimeout(resolve, Number(arg)));
  db.exec('COMMIT');
  db.close();
} else if (mode === 'count') {
  const store = SqliteJobStore.open(file, { busyTimeoutMs: 0 });
  console.log(JSON.stringify(await store.counts()));
  await store.close();
} else if (mode === 'read-loop') {
  const store = SqliteJobStore.open(file, { busyTimeoutMs: 0 });
  const endMs = Date.now() + Number(arg);
  const errors: string[] = [];
  const queuedSeen: number[] = [];
  let reads = 0;
  while (Date.now() < endMs) {
    try {
      queuedSeen.push((await store.counts()).queued);
      const page = await store.list({ limit: 20 });
      if (page.items[0] !== undefined) await store.events(page.items[0].id, 0);
      reads++;
    } catch (e) {
      errors.push(String(e));
    }
  }
  await store.close();
  console.log(JSON.stringify({ reads, errors, queuedSeen }));
} else {
  throw new Error(`unknown mode '${mode}'`);
}

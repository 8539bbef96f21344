// SPDX-License-Identifier: MIT
// The in-memory JobStore passes the same contract as the SQLite one, so the layers above can test against it.
import { MemoryJobStore } from '../../src/store/memory.js';
import { leaderboardContract } from './leaderboard.contract.js';
import { jobStoreContract } from './store.contract.js';

jobStoreContract('memory', () => new MemoryJobStore());
leaderboardContract('memory', () => new MemoryJobStore());

// SPDX-License-Identifier: MIT
// Nsight Compute's side of profile(), pure so it is tested without a GPU or ncu: the default metrics and the groups
// they are reported in, the ncu command line, and reading ncu's output (the raw page as CSV among the tool's
// `==PROF==` lines and the application's own output; the errors that say why there is nothing to read), and whether
// this process runs under compute-sanitizer, where ncu cannot profile.

/** The groups metrics are reported in: those of the original evaluation server, and 'other' for the rest. */
export type DeviceMetricGroup =
  | 'speedOfLight'
  | 'memory'
  | 'compute'
  | 'pipeline'
  | 'occupancy'
  | 'launch'
  | 'stalls'
  | 'scheduler'
  | 'accessPattern'
  | 'roofline'
  | 'other';

/** One metric as ncu printed it: a number (thousands separators removed), or text where it is not one. */
export interface DeviceMetric {
  /** The value: a number, or ncu's text where it is not one. */
  value: number | string;
  /** ncu's unit in base units (`--print-units base`): 'byte', '%', 'nsecond', 'cycle', '' ... */
  unit: string;
}

/**
 * The default metrics, by group: what the original server reported from `--set full`, named one by one so that ncu
 * replays the kernel only as often as these need. ncu's `gpu__time_duration.sum` is its own duration of the replayed
 * launch (caches flushed), not cudakit's timing.
 */
export const METRIC_GROUPS: Readonly<Record<Exclude<DeviceMetricGroup, 'other'>, readonly string[]>> = {
  speedOfLight: [
    'gpu__time_duration.sum',
    'sm__throughput.avg.pct_of_peak_sustained_elapsed',
    'gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed',
    'dram__throughput.avg.pct_of_peak_sustained_elapsed',
    'lts__throughput.avg.pct_of_peak_sustained_elapsed',
    'l1tex__throughput.avg.pct_of_peak_sustained_active',
    'gpc__cycles_elapsed.max',
    'sm__cycles_active.avg',
  ],
  memory: [
    'dram__bytes_read.sum',
    'dram__bytes_write.sum',
    'dram__bytes.sum.per_second',
    'lts__t_bytes.sum',
    'lts__t_sector_hit_rate.pct',
    'l1tex__t_sector_hit_rate.pct',
  ],
  compute: [
    'sm__inst_executed.avg.per_cycle_active',
    'smsp__inst_executed.sum',
    'sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active',
    'sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active',
    'sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active',
  ],
  pipeline: [
    'sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active',
    'sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active',
    'sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active',
    'sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active',
    'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active',
  ],
  occupancy: [
    'sm__warps_active.avg.pct_of_peak_sustained_active',
    'sm__maximum_warps_per_active_cycle_pct',
    'launch__occupancy_limit_blocks',
    'launch__occupancy_limit_registers',
    'launch__occupancy_limit_shared_mem',
    'launch__occupancy_limit_warps',
    'launch__waves_per_multiprocessor',
  ],
  launch: [
    'launch__grid_size',
    'launch__block_size',
    'launch__thread_count',
    'launch__registers_per_thread',
    'launch__shared_mem_per_block_static',
    'launch__shared_mem_per_block_dynamic',
  ],
  // Every reason a warp waits, each as a share of the active warps, so the largest few say where the time goes
  // (`selected` is no stall; Hopper's `gmma` is left out, as other GPUs lack it and would run ncu twice).
  stalls: [
    'smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct',
    'smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct',
    'smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct',
    'smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct',
    'smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct',
    'smsp__warp_issue_stalled_barrier_per_warp_active.pct',
    'smsp__warp_issue_stalled_wait_per_warp_active.pct',
    'smsp__warp_issue_stalled_not_selected_per_warp_active.pct',
    'smsp__warp_issue_stalled_drain_per_warp_active.pct',
    'smsp__warp_issue_stalled_no_instruction_per_warp_active.pct',
    'smsp__warp_issue_stalled_branch_resolving_per_warp_active.pct',
    'smsp__warp_issue_stalled_dispatch_stall_per_warp_active.pct',
    'smsp__warp_issue_stalled_imc_miss_per_warp_active.pct',
    'smsp__warp_issue_stalled_membar_per_warp_active.pct',
    'smsp__warp_issue_stalled_sleeping_per_warp_active.pct',
    'smsp__warp_issue_stalled_tex_throttle_per_warp_active.pct',
    'smsp__warp_issue_stalled_misc_per_warp_active.pct',
  ],
  scheduler: [
    'smsp__issue_active.avg.pct_of_peak_sustained_active',
    'smsp__inst_issued.avg.per_cycle_active',
    'smsp__warps_active.avg.per_cycle_active',
    'smsp__warps_eligible.avg.per_cycle_active',
  ],
  accessPattern: [
    'l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum',
    'l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum',
    'l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum',
    'l1tex__t_requests_pipe_lsu_mem_global_op_st.sum',
    'l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum',
    'l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum',
  ],
  roofline: [
    'smsp__sass_thread_inst_executed_op_fadd_pred_on.sum',
    'smsp__sass_thread_inst_executed_op_fmul_pred_on.sum',
    'smsp__sass_thread_inst_executed_op_ffma_pred_on.sum',
    'smsp__sass_thread_inst_executed_op_dadd_pred_on.sum',
    'smsp__sass_thread_inst_executed_op_dmul_pred_on.sum',
    'smsp__sass_thread_inst_executed_op_dfma_pred_on.sum',
    'sm__cycles_elapsed.avg.per_second',
    'dram__bytes.sum',
  ],
};

/** Every default metric, in group order. */
export const DEFAULT_DEVICE_METRICS: readonly string[] = Object.values(METRIC_GROUPS).flat();

/** The groups in the order they are shown, with their titles. */
export const GROUP_TITLES: Readonly<Record<DeviceMetricGroup, string>> = {
  speedOfLight: 'speed of light',
  memory: 'memory',
  compute: 'compute',
  pipeline: 'pipelines',
  occupancy: 'occupancy',
  launch: 'launch',
  stalls: 'warp stalls',
  scheduler: 'scheduler',
  accessPattern: 'access patterns',
  roofline: 'roofline',
  other: 'other',
};

const GROUP_OF = new Map<string, DeviceMetricGroup>(
  Object.entries(METRIC_GROUPS).flatMap(([g, names]) => names.map((n) => [n, g as DeviceMetricGroup] as const)),
);

/** The group of a metric: the table above, then its family (a section's launch__ and stall metrics), else 'other'. */
export function groupOf(metric: string): DeviceMetricGroup {
  const g = GROUP_OF.get(metric);
  if (g !== undefined) return g;
  if (metric.startsWith('launch__occupancy_limit_')) return 'occupancy';
  if (metric.startsWith('launch__')) return 'launch';
  if (metric.includes('_issue_stalled_')) return 'stalls';
  return 'other';
}

const RANK = new Map(DEFAULT_DEVICE_METRICS.map((name, i) => [name, i]));

/**
 * Metrics by group, groups in the order they are shown and each group's metrics in the table's order (others after
 * them, as given), so JSON and text read alike; empty groups left out.
 */
export function groupMetrics(
  metrics: Readonly<Record<string, DeviceMetric>>,
): Partial<Record<DeviceMetricGroup, Record<string, DeviceMetric>>> {
  const rank = (name: string): number => RANK.get(name) ?? Number.MAX_SAFE_INTEGER;
  const names = Object.keys(metrics).sort((a, b) => rank(a) - rank(b)); // stable: others keep their order
  const groups: Partial<Record<DeviceMetricGroup, Record<string, DeviceMetric>>> = {};
  for (const g of Object.keys(GROUP_TITLES) as DeviceMetricGroup[]) {
    for (const name of names) if (groupOf(name) === g) (groups[g] ??= {})[name] = metrics[name]!;
  }
  return groups;
}

/** A symbol as an exact ncu kernel-name regex: `regex:^name$` with regex characters escaped. */
export function kernelFilter(symbol: string): string {
  return `regex:^${symbol.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}$`;
}

/**
 * ncu's arguments for one launch of `symbol` by the application `app` (the Node child and its arguments). Nothing is
 * timed under ncu: `--cache-control all` flushes the caches before every replay pass, so each pass sees the kernel
 * cold, and `--clock-control none` leaves the clocks as they are (ncu would otherwise lock them to base).
 * `--kernel-name-base mangled` matches the symbol itself (a C++ kernel's mangled name, an extern "C" kernel's name)
 * and `--launch-count 1` stops after it: nothing else the application runs is profiled.
 */
export function ncuArguments(
  symbol: string,
  what: { metrics: readonly string[]; sections: readonly string[] },
  app: readonly string[],
): string[] {
  return [
    '--csv',
    '--page',
    'raw',
    '--print-units',
    'base',
    '--cache-control',
    'all',
    '--clock-control',
    'none',
    '--target-processes',
    'all',
    '--kernel-name-base',
    'mangled',
    '--kernel-name',
    kernelFilter(symbol),
    '--launch-count',
    '1',
    ...(what.metrics.length > 0 ? ['--metrics', what.metrics.join(',')] : []),
    ...what.sections.flatMap((s) => ['--section', s]),
    ...app,
  ];
}

/** One CSV line's fields: quoted ("a ""b"", c") or bare, comma-separated. */
export function csvFields(line: string): string[] {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    let field = '';
    if (line[i] === '"') {
      i++;
      for (;;) {
        const q = line.indexOf('"', i);
        if (q < 0) {
          field += line.slice(i);
          i = line.length;
          break;
        }
        field += line.slice(i, q);
        if (line[q + 1] === '"') {
          field += '"';
          i = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
    }
    const comma = line.indexOf(',', i);
    field += comma < 0 ? line.slice(i) : line.slice(i, comma);
    fields.push(field);
    if (comma < 0) return fields;
    i = comma + 1;
  }
}

// A number as ncu prints it: digits in groups of three with commas, a fraction, an exponent.
const NUMBER = /^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/** A value as a number where it is one ('67,108,864' → 67108864, '1.5e-05'), else the text ('n/a', a name). */
export function metricValue(text: string): number | string {
  const t = text.trim();
  if (t === '' || !/\d/.test(t) || !NUMBER.test(t)) return t;
  const n = Number(t.replaceAll(',', ''));
  return Number.isFinite(n) ? n : t;
}

/** What the raw page of one profiled kernel says. */
export interface NcuRawPage {
  /** The kernel as ncu names it (mangled, with --kernel-name-base mangled). */
  kernel: string;
  /** Its metrics by name: the columns whose names are metric names (a double underscore: `unit__counter`). */
  metrics: Record<string, DeviceMetric>;
  /** Kernels on the page; the first is the one read. */
  kernels: number;
}

/**
 * The raw page among ncu's output: the header row ("ID","Process ID",...,"Kernel Name",... then the metrics), a
 * units row (empty ID), then a row per profiled kernel. Lines that are not the table (`==PROF==`, `==WARNING==`, the
 * application's own output) are skipped wherever they are. Undefined when no kernel was profiled.
 */
export function parseRawPage(output: string): NcuRawPage | undefined {
  const lines = output.split(/\r?\n/);
  const at = lines.findIndex((l) => l.startsWith('"ID",'));
  if (at < 0) return undefined;
  const header = csvFields(lines[at]!);
  let units: string[] | undefined;
  const rows: string[][] = [];
  for (const line of lines.slice(at + 1)) {
    if (!line.startsWith('"')) continue;
    const fields = csvFields(line);
    if (fields[0] === '' && units === undefined && rows.length === 0) units = fields;
    else if (fields[0] !== '') rows.push(fields);
  }
  const row = rows[0];
  if (row === undefined) return undefined;
  const metrics: Record<string, DeviceMetric> = {};
  header.forEach((name, c) => {
    if (!name.includes('__') || c >= row.length) return;
    metrics[name] = { value: metricValue(row[c]!), unit: units?.[c] ?? '' };
  });
  const k = header.indexOf('Kernel Name');
  return { kernel: k >= 0 ? (row[k] ?? '') : '', metrics, kernels: rows.length };
}

/** ncu's version ('2025.3.1.0') from `ncu --version`, or undefined. */
export function ncuVersionOf(output: string): string | undefined {
  return /\bVersion\s+(\d[\w.-]*)/.exec(output)?.[1];
}

/** The metrics ncu says it cannot collect on this GPU (`==ERROR== Failed to access the following 2 metrics: a, b`). */
export function inaccessibleMetrics(output: string): string[] {
  const m = /Failed to access the following \d+ metrics?:\s*([^\r\n]+)/.exec(output);
  if (m === null) return [];
  return m[1]!
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** Whether ncu was refused the performance counters (ERR_NVGPUCTRPERM). */
export function lacksCounterPermission(output: string): boolean {
  return output.includes('ERR_NVGPUCTRPERM');
}

// Whether this process runs under compute-sanitizer, where ncu cannot profile: the core layer knows it, since CUPTI is
// not usable there either (cuptiStatus).
export { underComputeSanitizer } from '../core/index.js';

/**
 * The last lines of `output` for a message, without the raw page and ncu's progress lines: what says why. At most
 * `maxLines` lines and `maxChars` characters.
 */
export function outputTail(output: string, maxLines = 12, maxChars = 2000): string {
  const lines = output
    .split(/\r?\n/)
    .map((l) => l.trimEnd())
    .filter((l) => l !== '' && !l.startsWith('"') && !/^==PROF== (Connected|Disconnected|Profiling)/.test(l));
  const tail = lines.slice(-maxLines).join('\n');
  return tail.length > maxChars ? `…${tail.slice(-maxChars)}` : tail;
}

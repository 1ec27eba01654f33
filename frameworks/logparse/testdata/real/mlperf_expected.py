#!/usr/bin/env python3
"""Independent expected numbers for the fixture excerpts (pure python, stdlib only).

For each excerpt mlperf-<name>-llama31-8b.log beside this script prints (as one JSON document):
  - global_batch_size, run_start/run_stop time_ms, run status, run minutes (if both present)
  - blocks: every block_start paired with the next block_stop, in file order:
      first_sample  = samples already consumed when the block starts (0-based offset)
      last_sample   = cumulative samples consumed when the block ends
      block_samples = last_sample - first_sample
      duration_s    = (block_stop.time_ms - block_start.time_ms) / 1000
      mean_step_time_s = duration_s / (block_samples / global_batch_size)
    The meaning of metadata.samples_count differs between logs, so the convention is
    detected per file and reported ("convention"):
      "length+step": block_start/stop carry metadata.step (global step index) and
                     samples_count == block length  -> first = start.step*GBS,
                     last = stop.step*GBS (checked against samples_count)
      "start-offset": no step; block_stop.samples_count == block_start.samples_count ==
                     samples before the block -> first = start.samples_count,
                     last = samples_count of the next eval_accuracy/eval_start/block_start
                     that is larger (the block's end)
      "cumulative":  no step; block_start.samples_count = samples before the block,
                     block_stop.samples_count = samples after it.
  - per-step timing: tracked_stats values with "train_step_time" split into
      per_step   (entries that also carry reduced_train_loss: periodic per-step logs)
      per_block  (entries without reduced_train_loss: one summary per block)
    mean of each, overall and per block; AMD logs have tracked_stats "throughput" instead.
  - evals: every eval_accuracy (samples_count, value, epoch_num if present).
Usage: python3 mlperf_expected.py [names...] > mlperf-expected.json
"""
import json
import os
import sys

DIR = os.path.dirname(os.path.abspath(__file__))
NAMES = ['nvidia-gb300-x8', 'nvidia-gb200-x72', 'dell-b200-x8', 'ufl-b200-x16',
         'cisco-h100-x128', 'amd-mi355x']
TOKEN = ':::MLLOG '


def events(path):
    out = []
    with open(path, encoding='latin-1') as f:
        for n, line in enumerate(f, 1):
            i = line.find(TOKEN)
            if i < 0:
                continue
            d = json.loads(line[i + len(TOKEN):])
            d['_line'] = n
            d['_prefix'] = line[:i]
            out.append(d)
    return out


def mean(xs):
    return sum(xs) / len(xs) if xs else None


def analyse(name):
    ev = events('%s/mlperf-%s-llama31-8b.log' % (DIR, name))
    gbs = next((e['value'] for e in ev if e['key'] == 'global_batch_size'), None)
    rs = next((e for e in ev if e['key'] == 'run_start'), None)
    rp = next((e for e in ev if e['key'] == 'run_stop'), None)
    res = {
        'excerpt': name + '.log',
        'global_batch_size': gbs,
        'prefixes_seen': sorted({e['_prefix'] for e in ev}),
        'run_start_ms': rs and rs['time_ms'],
        'run_stop_ms': rp and rp['time_ms'],
        'run_status': rp and rp['metadata'].get('status'),
        'run_minutes': (rp['time_ms'] - rs['time_ms']) / 60000.0 if rs and rp else None,
    }

    # --- pair blocks ---
    pairs, unpaired, open_start = [], [], None
    for idx, e in enumerate(ev):
        if e['key'] == 'block_start':
            if open_start is not None:
                unpaired.append(('block_start', open_start[1]['_line']))
            open_start = (idx, e)
        elif e['key'] == 'block_stop':
            if open_start is None:
                unpaired.append(('block_stop', e['_line']))
            else:
                pairs.append((open_start[0], open_start[1], idx, e))
                open_start = None
    if open_start is not None:
        unpaired.append(('block_start', open_start[1]['_line']))

    conv = None
    if pairs:
        s0, p0 = pairs[0][1]['metadata'], pairs[0][3]['metadata']
        if 'step' in s0 and 'step' in p0:
            conv = 'length+step'
        elif s0.get('samples_count') == p0.get('samples_count'):
            conv = 'start-offset'
        else:
            conv = 'cumulative'
    res['convention'] = conv

    blocks = []
    all_step, all_blocksum, all_tput = [], [], []
    for si, s, pi, p in pairs:
        sm, pm = s['metadata'], p['metadata']
        check = None
        if conv == 'length+step':
            first = sm['step'] * gbs
            last = pm['step'] * gbs
            check = (last - first == sm['samples_count'] == pm['samples_count'])
        elif conv == 'start-offset':
            first = sm['samples_count']
            last = None
            for e in ev[pi + 1:]:
                if e['key'] in ('eval_accuracy', 'eval_start', 'block_start', 'run_stop') and \
                        e['metadata'].get('samples_count', -1) > first:
                    last = e['metadata']['samples_count']
                    break
        else:
            first, last = sm['samples_count'], pm['samples_count']
        dur = (p['time_ms'] - s['time_ms']) / 1000.0
        nsamp = (last - first) if last is not None else None
        steps = nsamp / gbs if nsamp is not None and gbs else None
        per_step, per_block, tput = [], [], []
        # tracked_stats inside the block window, plus the summary right before block_stop
        for e in ev[si + 1:pi]:
            if e['key'] != 'tracked_stats' or not isinstance(e['value'], dict):
                continue
            v = e['value']
            if 'train_step_time' in v:
                (per_step if 'reduced_train_loss' in v else per_block).append(v['train_step_time'])
            if 'throughput' in v:
                tput.append(v['throughput'])
        all_step += per_step
        all_blocksum += per_block
        all_tput += tput
        blocks.append({
            'block_start_line': s['_line'], 'block_stop_line': p['_line'],
            'start_metadata': {k: v for k, v in sm.items() if k not in ('file', 'lineno')},
            'stop_metadata': {k: v for k, v in pm.items() if k not in ('file', 'lineno')},
            'first_sample': first, 'last_sample': last, 'block_samples': nsamp,
            'samples_count_check': check,
            'duration_s': dur,
            'steps': steps,
            'mean_step_time_s': dur / steps if steps else None,
            'per_step_train_step_time_n': len(per_step),
            'per_step_train_step_time_mean': mean(per_step),
            'block_summary_train_step_time': per_block,
            'throughput_values': tput,
        })
    res['blocks'] = blocks
    res['unpaired_block_events'] = unpaired

    # all train_step_time-style values in the whole excerpt (also outside paired blocks)
    ts_step, ts_block, ts_tput, val_step = [], [], [], []
    for e in ev:
        if e['key'] == 'tracked_stats' and isinstance(e['value'], dict):
            v = e['value']
            if 'train_step_time' in v:
                (ts_step if 'reduced_train_loss' in v else ts_block).append(v['train_step_time'])
            if 'throughput' in v:
                ts_tput.append(v['throughput'])
            if 'validation_step_time' in v:
                val_step.append(v['validation_step_time'])
    res['train_step_time_per_step'] = {'n': len(ts_step), 'mean': mean(ts_step)}
    res['train_step_time_block_summary'] = {'n': len(ts_block), 'mean': mean(ts_block), 'values': ts_block}
    res['throughput'] = {'n': len(ts_tput), 'mean': mean(ts_tput), 'values': ts_tput}
    res['validation_step_time'] = {'n': len(val_step), 'mean': mean(val_step)}
    res['evals'] = [dict({'line': e['_line'], 'samples_count': e['metadata'].get('samples_count'),
                          'value': e['value']},
                         **({'epoch_num': e['metadata']['epoch_num']} if 'epoch_num' in e['metadata'] else {}))
                    for e in ev if e['key'] == 'eval_accuracy']
    return res


def main():
    names = sys.argv[1:] or NAMES
    print(json.dumps({n: analyse(n) for n in names}, indent=1))


if __name__ == '__main__':
    main()

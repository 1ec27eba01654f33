#!/usr/bin/env python3
"""Score MLPerf Training llama31_8b submissions.

Two independent computations per system directory:

 (A) "official": mlcommons/logging's own scorer, imported from a checkout of tag
     5.1.0-rc4 (commit 82bfae7965228b9c245379514a75e1584cbdd305) at $MLPERF_LOGGING:
       mlperf_logging/result_summarizer/result_summarizer.py
         _compute_strong_score_standalone(benchmark, system, has_power,
             benchmark_folder, usage, ruleset, desc, return_full_scores=True)
     It runs the compliance checker (ruleset 5.1.0) on every result_*.txt, drops
     non-compliant files (dropped_scores), computes (run_stop - run_start)
     ms / 60000 per file, then _compute_olympic_average(scores, dropped,
     max_dropped=1) -- sort, drop the single fastest and (1 - dropped) slowest,
     mean of the rest -- and multiplies by scaling.json's scaling_factor if the
     folder has one.  pandas need not be installed: it is only used by the
     table-building part of that module, so an empty module named pandas stands in for it.

 (B) "mine": a from-scratch reimplementation of the same rule (no compliance
     check): first run_start/run_stop of each file, minutes, sort, drop first
     and last, mean, times scaling factor.  Files whose run_stop status is not
     "success" are dropped the same way (count as a dropped run).

Usage: MLPERF_SRC=... MLPERF_LOGGING=... python3 score.py  (writes scores.tsv, systems.tsv, score_runs.tsv)
"""
import contextlib
import glob
import io
import json
import os
import re
import sys
import types

# SRC holds the round's <submitter>/results/<system>/llama31_8b/result_*.txt and systems/*.json
# (a checkout of mlcommons/training_results_v5.1 at COMMIT); LOGGING a checkout of
# mlcommons/logging at tag 5.1.0-rc4; OUT receives the tables.
OUT = os.environ.get('MLPERF_OUT', os.path.dirname(os.path.abspath(__file__)))
SRC = os.environ.get('MLPERF_SRC', 'training_results_v5.1')
LOGGING = os.environ.get('MLPERF_LOGGING', 'logging-5.1.0-rc4')
ROUND = 'v5.1'
COMMIT = '441d65f4445cd59687466533fd9f55399136e7a4'
REPO = 'mlcommons/training_results_v5.1'
BENCH = 'llama31_8b'

sys.modules['pandas'] = types.ModuleType('pandas')  # an empty stand-in: the scoring code never calls pandas
sys.path.insert(0, LOGGING)
from mlperf_logging.result_summarizer import result_summarizer as rs  # noqa: E402

TOKEN = ':::MLLOG '

# Precision where the result logs do not carry a NeMo config dump.
# value: (precision, source)
_NV = 'NVIDIA/benchmarks/llama31_8b/implementations/'
MANUAL_PRECISION = {
    'NVIDIA/theia_ngpu8_ngc25.09_nemo': ('fp4 (nvfp4)', _NV + 'theia_ngpu8_ngc25.09_nemo/README-*.md -> nemo/config_GB300_2x4x2xtp1pp1cp1_8b_fp4.sh (sources config_common_fp4.sh: FP4=True, FP8=False)'),
    'NVIDIA/tyche_ngpu8_ngc25.09_nemo': ('fp4 (nvfp4)', _NV + 'tyche_ngpu8_ngc25.09_nemo/README-*.md -> nemo/config_GB200_2x4x2xtp1pp1cp1_8b_fp4.sh (sources config_common_fp4.sh: FP4=True, FP8=False)'),
    'NVIDIA/theia_ngpu72_ngc25.09_nemo': ('fp8', _NV + 'theia_ngpu72_ngc25.09_nemo/README-*.md -> nemo/config_GB300_18x4x1xtp1pp1cp2_8b.sh (config_common.sh: FP8=True, no fp4 include)'),
    'NVIDIA/tyche_ngpu72_ngc25.09_nemo': ('fp8', _NV + 'tyche_ngpu72_ngc25.09_nemo/README-*.md -> nemo/config_GB200_18x4x1xtp1pp1cp2_8b.sh (config_common.sh: FP8=True, no fp4 include)'),
    'NVIDIA/theia_ngpu512_ngc25.09_nemo': ('fp8', _NV + 'theia_ngpu512_ngc25.09_nemo/README-*.md -> nemo/config_GB300_128x4x1xtp2pp1cp4_8b.sh (config_common.sh: FP8=True, no fp4 include)'),
    'NVIDIA/tyche_ngpu512_ngc25.09_nemo': ('fp8', _NV + 'tyche_ngpu512_ngc25.09_nemo/README-*.md -> nemo/config_GB200_128x4x1xtp2pp1cp4_8b.sh (config_common.sh: FP8=True, no fp4 include)'),
    'Dell/1xXE9680Lx8B200-SXM-180GB': ('fp4 (nvfp4)', 'inferred by name: Dell/benchmarks/llama31_8b/implementations/nemo/config_1xXE9680Lx8B200-SXM-180GB.sh sources config_common_fp4.sh'),
    'Lenovo/SR680aV3-8xB200_SXM_180GB': ('fp4 (nvfp4)', 'inferred: Lenovo/benchmarks/llama31_8b/config_SR780aV3_SR680aV3_SR680aV4.sh (only 8b config) sources config_common_fp4.sh'),
    'Lenovo/SR680aV4-8xB300_SXM': ('fp4 (nvfp4)', 'inferred: Lenovo/benchmarks/llama31_8b/config_SR780aV3_SR680aV3_SR680aV4.sh (only 8b config) sources config_common_fp4.sh'),
    'Lenovo/SR780aV3-8xB200_SXM_180GB': ('fp4 (nvfp4)', 'inferred: Lenovo/benchmarks/llama31_8b/config_SR780aV3_SR680aV3_SR680aV4.sh (only 8b config) sources config_common_fp4.sh'),
    'Cisco/hpf_n8': ('fp8', 'inferred: Cisco/benchmarks/llama31_8b/implementations/nemo/config_DGXH100_8x8x1xtp1pp1cp1.sh sources config_common.sh: FP8=True'),
    'Cisco/hpf_n16': ('fp8', 'inferred: Cisco/benchmarks/llama31_8b/implementations/nemo/config_DGXH100_16x8x1xtp2pp1cp1.sh sources config_common.sh: FP8=True'),
    'AMD/MI350X_EPYC_9575F_pytorch': ('fp8 (hybrid)', 'AMD/benchmarks/llama31_8b/implementations/MI350X_*/config_MI350X_1x8x1_8b.sh FP8_PARAMS=1; src/train.py sets fp8="hybrid"'),
    'AMD/MI355X_EPYC_9575F_pytorch': ('fp8 (hybrid)', 'AMD/benchmarks/llama31_8b/implementations/MI355X_*/config_MI355X_1x8x1_8b.sh FP8_PARAMS=1; src/train.py sets fp8="hybrid"'),
    'Dell/XE9785L_8xMI355X': ('fp8 (hybrid)', 'Dell/benchmarks/llama31_8b/implementations/AMD/config_MI355X_1x8x1_8b.sh FP8_PARAMS=1 (AMD code base)'),
    'GigaComputing/G893-ZX1-AAX4_pytorch': ('fp8 (hybrid)', 'GigaComputing/benchmarks/llama31_8b/implementations/MI355X/nemo/config_MI355X_1x8x1_8b.sh FP8_PARAMS=1 (AMD code base)'),
    'Supermicro/8xMI355X_2xEPYC_9575F': ('fp8 (hybrid)', 'Supermicro/benchmarks/llama31_8b/implementations/8xMI355X_2xEPYC_9575F/config_MI355X_1x8x1_8b.sh FP8_PARAMS=1 (AMD code base)'),
    'Cisco/1xC885A_M8-8xMI350X-OAM-288GB': ('fp8? (unconfirmed)', 'log passes --env=FP8_PARAMS (value not logged); Cisco has no llama31_8b AMD implementation dir'),
}


def mllog(path):
    out = []
    with open(path, encoding='latin-1') as f:
        for line in f:
            i = line.find(TOKEN)
            if i < 0:
                continue
            try:
                out.append(json.loads(line[i + len(TOKEN):]))
            except ValueError:
                pass
    return out


def precision_from_log(path):
    """NeMo TransformerConfig dump inside the log: fp4=..., fp8=..."""
    fp4 = fp8 = None
    with open(path, encoding='latin-1') as f:
        for line in f:
            m = re.search(r"\bfp4=([^,\s]+),", line)
            if m and fp4 is None:
                fp4 = m.group(1)
            m = re.search(r"\bfp8=([^,\s]+),", line)
            if m and fp8 is None:
                fp8 = m.group(1)
    if fp4 is None and fp8 is None:
        return None
    if fp4 not in (None, 'None'):
        p = 'fp4 (fp4=%s)' % fp4
    elif fp8 not in (None, 'None'):
        p = 'fp8 (fp8=%s)' % fp8
    else:
        p = 'bf16'
    return p, 'NeMo config dump in result log: fp4=%s fp8=%s' % (fp4, fp8)


def my_score(files, scaling):
    runs = []
    dropped = 0
    for f in files:
        ev = mllog(f)
        start = next((e for e in ev if e['key'] == 'run_start'), None)
        stop = next((e for e in ev if e['key'] == 'run_stop'), None)
        if start is None or stop is None or stop.get('metadata', {}).get('status') != 'success':
            dropped += 1
            runs.append((f, None, stop and stop.get('metadata', {}).get('status')))
            continue
        runs.append((f, (stop['time_ms'] - start['time_ms']) / 60000.0, 'success'))
    mins = sorted(r[1] for r in runs if r[1] is not None)
    kept = mins[1:len(mins) - (1 - dropped)] if dropped <= 1 else []
    score = sum(kept) / len(kept) * scaling if kept else None
    return score, len(kept), runs


def main():
    sysrows, scorerows, runrows = [], [], []
    dirs = sorted(glob.glob(os.path.join(SRC, '*', 'results', '*', BENCH)))
    for d in dirs:
        rel = os.path.relpath(d, SRC)
        submitter, _, system_dir, _ = rel.split(os.sep)
        desc = json.load(open(os.path.join(SRC, submitter, 'systems', system_dir + '.json')))
        files = sorted(glob.glob(os.path.join(d, 'result_*.txt')))
        nodes = int(desc['number_of_nodes'])
        apn = int(desc['accelerators_per_node'])
        sysrows.append([ROUND, submitter, system_dir, desc['system_name'], str(nodes), str(apn),
                        desc['accelerator_model_name'], desc['framework'], str(len(files)), COMMIT])

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            track, _, off_score, _ = rs._compute_strong_score_standalone(
                BENCH, system_dir, False, d, 'training', '5.1.0',
                desc={'submitter': submitter}, return_full_scores=True)
        msgs = [l for l in buf.getvalue().splitlines() if l.strip()]
        scaling = rs._get_scaling_factor(d) if os.path.exists(os.path.join(d, 'scaling.json')) else 1.0
        mine, used, runs = my_score(files, scaling)
        for f, m, st in runs:
            runrows.append([ROUND, submitter, system_dir, os.path.basename(f),
                            '' if m is None else '%.4f' % m, str(st),
                            'compliant' if f in track else 'NOT-compliant/dropped'])

        prec = precision_from_log(files[0])
        if prec is None:
            prec = MANUAL_PRECISION.get('%s/%s' % (submitter, system_dir), ('unknown', 'not found in log, system json or implementation dir'))
        n_compliant = len(track)
        runs_used = len(sorted(track.values())[1:n_compliant - (1 - (len(files) - n_compliant))])
        agree = (off_score is not None and mine is not None and abs(off_score - mine) < 1e-9)
        scorerows.append([ROUND, submitter, desc['system_name'], system_dir, str(nodes * apn),
                          desc['accelerator_model_name'], prec[0], prec[1], desc['framework'],
                          '' if off_score is None else '%.3f' % off_score,
                          '' if mine is None else '%.3f' % mine,
                          '%.6f' % scaling, str(runs_used), '%d/%d' % (n_compliant, len(files)),
                          'yes' if agree else 'NO',
                          '%s/results/%s/%s' % (submitter, system_dir, BENCH), COMMIT,
                          ' | '.join(m for m in msgs if not m.startswith('NOTICE: Applying scaling'))])
        print('%-14s %-40s official=%s mine=%s scale=%.4f compliant=%d/%d' % (
            submitter, system_dir, off_score, mine, scaling, n_compliant, len(files)))
        for m in msgs:
            print('    ' + m)

    with open(os.path.join(OUT, 'systems.tsv'), 'w') as f:
        f.write('\t'.join(['round', 'submitter', 'system_dir', 'system_name', 'nodes', 'accel_per_node',
                           'accelerator', 'framework', 'n_result_files', 'commit']) + '\n')
        for r in sysrows:
            f.write('\t'.join(r) + '\n')
    with open(os.path.join(OUT, 'scores.tsv'), 'w') as f:
        f.write('\t'.join(['round', 'submitter', 'system_name', 'system_dir', 'accelerators_total', 'accelerator',
                           'precision', 'precision_source', 'framework', 'minutes',
                           'minutes_independent', 'scaling_factor', 'runs_used', 'compliant_files',
                           'official_eq_independent', 'source_path', 'commit', 'scorer_messages']) + '\n')
        for r in scorerows:
            f.write('\t'.join(r) + '\n')
    with open(os.path.join(OUT, 'score_runs.tsv'), 'w') as f:
        f.write('round\tsubmitter\tsystem_dir\tfile\tminutes_unscaled\trun_stop_status\tcompliance\n')
        for r in runrows:
            f.write('\t'.join(r) + '\n')


if __name__ == '__main__':
    main()

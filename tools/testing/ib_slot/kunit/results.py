#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Per-suite results of one KUnit VM run (see ../kunit.sh).

The guest loads several test modules and saves one kernel log, in which
each module load printed a KTAP document of its own.  kunit.py parse reads
the first document of its input only, so the log is cut where each document
starts ("KTAP version" at the top level), and kunit.py parses every piece
(saved as <outdir>/ktap-N.log, .txt and .json).

Warnings: the suites marked 0 ran with panic_on_warn=0 because they warn on
purpose, and so did any suite loaded with them; a warning counts for the
suite between whose "# Subtest:" and result lines it appears.  One printed
as "unexpected" came from a suite not marked 0, or from no suite at all.

Prints one line per suite asked for, in order:
    <suite> <passed> <failed> <skipped> <crashed> <warnings> <from the core's slot*.c>
("missing" instead of the counts when no piece of the log had the suite),
then "unexpected <warnings>".

usage: results.py <kunit.py> <log> <outdir> <suite>:<panic_on_warn>...
"""

import json
import os
import re
import subprocess
import sys

DOC_START = re.compile(r'^\[[^\]]*\] KTAP version \d+$')
SUITE_START = re.compile(r'^\[[^\]]*\]     # Subtest: (\S+)$')
SUITE_END = re.compile(r'^\[[^\]]*\] (?:not )?ok \d+ (\S+)')
WARNING = re.compile(r'WARNING: CPU: \d+ PID: \d+ at (\S+?):\d+ ')
# The ib_slot core: drivers/infiniband/core/slot.c, slot_get.c, ...
SLOT_FILE = re.compile(r'drivers/infiniband/core/slot(_[a-z]+)?\.c$')

STATUS = {'PASS': 0, 'FAIL': 1, 'SKIP': 2, 'ERROR': 3}


def leaves(group, counts):
	"""Add up a suite's leaf cases by status, as kunit.py counts them."""
	for case in group['test_cases']:
		counts[STATUS.get(case['status'], 1)] += 1
	for sub in group['sub_groups']:
		leaves(sub, counts)


def main():
	kunit_py, log, outdir = sys.argv[1:4]
	wanted = [a.rsplit(':', 1) for a in sys.argv[4:]]
	with open(log, errors='replace') as f:
		lines = f.read().splitlines()

	docs = []
	for line in lines:
		if DOC_START.match(line):
			docs.append([])
		if docs:
			docs[-1].append(line)

	results = {}
	for n, doc in enumerate(docs):
		base = os.path.join(outdir, f'ktap-{n}')
		with open(base + '.log', 'w') as f:
			f.write('\n'.join(doc) + '\n')
		with open(base + '.log') as inp, open(base + '.txt', 'w') as out:
			subprocess.run([sys.executable, kunit_py, 'parse',
					'--json=' + base + '.json'],
				       stdin=inp, stdout=out, stderr=subprocess.STDOUT,
				       check=False)
		try:
			with open(base + '.json') as f:
				top = json.load(f)
		except (OSError, ValueError):
			continue
		with open(base + '.txt', errors='replace') as f:
			text = f.read()
		for group in top['sub_groups']:
			name = group['name']
			counts = [0, 0, 0, 0]
			leaves(group, counts)
			# kunit.py failed the suite itself (a missing result
			# line, say) though no case failed: count one failure.
			if not counts[1] + counts[3] and re.search(
					r'\[(?:FAILED|CRASHED)\] ' + re.escape(name) +
					r'(?: |$)|\[ERROR\] Test: ' + re.escape(name) + ':',
					text, re.M):
				counts[1] = 1
			results[name] = counts
		# A suite that crashed before its first case has no cases.
		for case in top['test_cases']:
			counts = [0, 0, 0, 0]
			counts[STATUS.get(case['status'], 1)] = 1
			results[case['name']] = counts

	warned = {}
	suite = None
	unexpected = 0
	expect = {name: pow == '0' for name, pow in wanted}
	for line in lines:
		m = SUITE_START.match(line)
		if m:
			suite = m.group(1)
			continue
		m = WARNING.search(line)
		if m:
			if suite and expect.get(suite):
				w = warned.setdefault(suite, [0, 0])
				w[0] += 1
				w[1] += bool(SLOT_FILE.search(m.group(1)))
			else:
				unexpected += 1
			continue
		m = SUITE_END.match(line)
		if m and m.group(1) == suite:
			suite = None

	for name, _ in wanted:
		if name not in results:
			print(name, 'missing')
			continue
		w = warned.get(name, [0, 0])
		print(name, *results[name], *w)
	print('unexpected', unexpected)


if __name__ == '__main__':
	main()

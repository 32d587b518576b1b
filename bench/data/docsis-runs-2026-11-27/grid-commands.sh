#!/bin/bash
# issue 31's grid, one batch after another (never two measurements at once)
cd /work/main
B=".venv/bin/python bench/docsis.py --jobs ${JOBS:-6}"
O=/work/notes/grid
date > $O/start
$B --only alpha --alphas 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,20,25,30,35 --links simple,docsis --repeat 10 --duration 15 --warmup 5 --json $O/alpha-main.json > $O/alpha-main.log 2>&1
date >> $O/start
$B --only alpha --alphas 1,2,3,4,5,6,8,12,16,20,35 --links docsis-off --repeat 5 --duration 15 --warmup 5 --json $O/alpha-off.json > $O/alpha-off.log 2>&1
date >> $O/start
$B --only windows --windows 5,10,15,20,25,28,30,32,34,36,38,40,42,45 --links simple,docsis --repeat 5 --duration 10 --warmup 4 --json $O/windows.json > $O/windows.log 2>&1
date >> $O/start
$B --only windows --windows 5,10,20,30,38,45 --links docsis-off --repeat 3 --duration 10 --warmup 4 --json $O/windows-off.json > $O/windows-off.log 2>&1
date >> $O/start
$B --only alpha --alphas 2,4,6,8,10,12,14,16,20 --links simple,docsis --repeat 5 --duration 15 --warmup 5 --flows 2 --json $O/pred-2flows.json > $O/pred-2flows.log 2>&1
date >> $O/start
$B --alphas 2,4,6,8,10,12,14,16,20 --windows 5,10,20,30,40 --links simple,docsis --repeat 5 --duration 15 --warmup 5 --downstream 1,2 --json $O/pred-rates.json > $O/pred-rates.log 2>&1
date >> $O/start
$B --only windows --windows 5,10,20,30,40 --links simple,docsis --repeat 3 --duration 10 --warmup 4 --flows 2 --json $O/pred-2flows-windows.json > $O/pred-2flows-windows.log 2>&1
date >> $O/start
echo done >> $O/start
# and the seeds the verdict left out: --only windows --windows 25,28,30 --links simple,docsis --repeat 1 --first-seed 6 --duration 10 --warmup 4 --jobs 6

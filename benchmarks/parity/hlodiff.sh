#!/bin/bash
# Diff the optimized HLO of one model between tracejax and JAX, names and metadata normalized.
norm() { sed -E 's/, metadata=\{[^}]*\}//; s/metadata=\{[^}]*\}//' "$1" | sed -E 's/%[A-Za-z_0-9.-]+/%V/g; s/^HloModule.*//; s/ENTRY.*//' | sed -E 's/\(([A-Za-z_0-9.]+: [a-z0-9]+\[[0-9,]*\](, )?)+\)/(ARGS)/' | sed '/^FileNames/,/^$/d; /^FunctionNames/,/^$/d; /^FileLocations/,/^$/d; /^StackFrames/,/^$/d' | grep -v '^$'; }
diff <(norm out_tj/$1.hlo.txt) <(norm out_jax/$1.hlo.txt)

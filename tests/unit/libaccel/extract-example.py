#!/usr/bin/env python3
# Extract the ```c block after the "## Example" heading of Documentation/libaccel.md.
# With a third argument HEADING: every ```c block of the section "HEADING" (up to the next "## "
# heading), concatenated in order (the per-function examples of the vector-unit operations).
import sys
text = open(sys.argv[1]).read()
if len(sys.argv) > 3:
    body = text[text.index(sys.argv[3] + '\n'):]
    nxt = body.find('\n## ', 1)
    body = body if nxt < 0 else body[:nxt]
    out, pos = [], 0
    while True:
        start = body.find('```c\n', pos)
        if start < 0:
            break
        end = body.index('```', start + 5)
        out.append(body[start + 5:end])
        pos = end + 3
    open(sys.argv[2], 'w').write('\n'.join(out))
    sys.exit(0)
body = text[text.index('## Example'):]
start = body.index('```c\n') + 5
end = body.index('```', start)
open(sys.argv[2], 'w').write(body[start:end])

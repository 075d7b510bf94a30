#!/usr/bin/env python3
# Extract the ```c block after the "## Example" heading of Documentation/libaccel.md.
import sys
text = open(sys.argv[1]).read()
body = text[text.index('## Example'):]
start = body.index('```c\n') + 5
end = body.index('```', start)
open(sys.argv[2], 'w').write(body[start:end])

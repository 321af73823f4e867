"""The veth testbed: the four profiles measured on this machine's kernel with
Debian's memcached and irqlab's load generator, beside the simulator's
prediction for the same setup (``irqlab testbed run``)."""

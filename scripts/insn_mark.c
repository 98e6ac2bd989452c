// SPDX-License-Identifier: GPL-2.0
/*
 * insn_mark: marks a point of a guest's run for the insn_count QEMU plugin
 * (scripts/insn_count.c), which then writes the instructions the guest
 * executed since the last mark. "insn_mark profile" asks for the kernel's
 * instructions by translation block as well. Without the plugin the
 * instruction is an exchange of a register with itself: nothing happens.
 */
#include <string.h>

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "profile") == 0)
		__asm__ volatile(".byte 0x66, 0x87, 0xc9" ::: "memory"); /* xchg %cx,%cx */
	else
		__asm__ volatile(".byte 0x66, 0x87, 0xdb" ::: "memory"); /* xchg %bx,%bx */
	return 0;
}

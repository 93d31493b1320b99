package seccomp

import "fmt"

// insn is one classic BPF instruction, laid out as struct sock_filter.
type insn struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// Opcodes (linux/bpf_common.h) for the few instruction forms the filter
// uses: 32-bit absolute loads, AND with a constant, jumps, returns.
const (
	opLdAbsW = 0x00 | 0x00 | 0x20 // BPF_LD | BPF_W | BPF_ABS
	opAndK   = 0x04 | 0x50 | 0x00 // BPF_ALU | BPF_AND | BPF_K
	opJa     = 0x05 | 0x00        // BPF_JMP | BPF_JA
	opRetK   = 0x06 | 0x00        // BPF_RET | BPF_K

	jeq  = 0x05 | 0x10 | 0x00 // BPF_JMP | BPF_JEQ | BPF_K
	jge  = 0x05 | 0x30 | 0x00 // BPF_JMP | BPF_JGE | BPF_K
	jset = 0x05 | 0x40 | 0x00 // BPF_JMP | BPF_JSET | BPF_K

	maxInsns = 4096 // BPF_MAXINSNS: the kernel refuses longer programs
)

// label names an instruction position; 0 means "the next instruction".
type label int

// asm is a tiny assembler: instructions refer to labels and resolve fills in
// the relative offsets once every label has a position.
type asm struct {
	prog []insn
	at   []int // position of label i+1, -1 until marked
	refs []ref
}

type ref struct {
	pc    int
	l     label
	field byte // 't', 'f' (8-bit conditional offsets) or 'k' (JA)
}

func (a *asm) newLabel() label {
	a.at = append(a.at, -1)
	return label(len(a.at))
}

func (a *asm) mark(l label) { a.at[l-1] = len(a.prog) }

func (a *asm) ld(off uint32) { a.prog = append(a.prog, insn{Code: opLdAbsW, K: off}) }

func (a *asm) and(k uint32) { a.prog = append(a.prog, insn{Code: opAndK, K: k}) }

func (a *asm) ret(k uint32) { a.prog = append(a.prog, insn{Code: opRetK, K: k}) }

func (a *asm) ja(l label) {
	a.refs = append(a.refs, ref{len(a.prog), l, 'k'})
	a.prog = append(a.prog, insn{Code: opJa})
}

func (a *asm) jmp(op uint16, k uint32, t, f label) {
	pc := len(a.prog)
	if t != 0 {
		a.refs = append(a.refs, ref{pc, t, 't'})
	}
	if f != 0 {
		a.refs = append(a.refs, ref{pc, f, 'f'})
	}
	a.prog = append(a.prog, insn{Code: op, K: k})
}

func (a *asm) resolve() ([]insn, error) {
	if len(a.prog) > maxInsns {
		return nil, fmt.Errorf("seccomp filter: %d instructions, kernel limit %d", len(a.prog), maxInsns)
	}
	for _, r := range a.refs {
		to := a.at[r.l-1]
		off := to - (r.pc + 1)
		if to < 0 || off < 0 {
			return nil, fmt.Errorf("seccomp filter: label %d unmarked or behind pc %d", r.l, r.pc)
		}
		switch r.field {
		case 'k':
			a.prog[r.pc].K = uint32(off)
		case 't', 'f':
			if off > 255 {
				return nil, fmt.Errorf("seccomp filter: jump of %d from pc %d does not fit 8 bits", off, r.pc)
			}
			if r.field == 't' {
				a.prog[r.pc].Jt = uint8(off)
			} else {
				a.prog[r.pc].Jf = uint8(off)
			}
		}
	}
	return a.prog, nil
}

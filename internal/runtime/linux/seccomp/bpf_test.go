package seccomp

import (
	"encoding/binary"
	"fmt"
)

// seccompData mirrors struct seccomp_data, the input of every filter run.
type seccompData struct {
	nr   int32
	arch uint32
	ip   uint64
	args [6]uint64
}

func (d seccompData) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], uint32(d.nr))
	binary.LittleEndian.PutUint32(b[4:], d.arch)
	binary.LittleEndian.PutUint64(b[8:], d.ip)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// run interprets prog on d the way the kernel's classic BPF does, for the
// instruction forms seccomp accepts. It refuses anything the kernel's
// seccomp_check_filter would refuse among the forms the filter uses, so a
// malformed program fails the test rather than passing by accident.
func run(prog []insn, d seccompData) (uint32, error) {
	if len(prog) == 0 || len(prog) > maxInsns {
		return 0, fmt.Errorf("program length %d", len(prog))
	}
	data := d.bytes()
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case opLdAbsW:
			if in.K%4 != 0 || in.K+4 > uint32(len(data)) {
				return 0, fmt.Errorf("pc %d: load at %d outside seccomp_data", pc, in.K)
			}
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case opAndK:
			acc &= in.K
		case opJa:
			pc += int(in.K)
		case jeq, jge, jset:
			var taken bool
			switch in.Code {
			case jeq:
				taken = acc == in.K
			case jge:
				taken = acc >= in.K
			case jset:
				taken = acc&in.K != 0
			}
			if taken {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case opRetK:
			return in.K, nil
		default:
			return 0, fmt.Errorf("pc %d: opcode %#x not expected in this filter", pc, in.Code)
		}
	}
	return 0, fmt.Errorf("ran off the end of the program")
}

package assign

import (
	"math"
	"strings"
	"testing"
)

// TestSolveNoColumns catches a boundary fault in the shape check (cols < 0
// read as cols <= 0): a bag with candidate rows but no columns is a valid,
// empty problem, every row left out, not an error.
func TestSolveNoColumns(t *testing.T) {
	for _, tc := range []struct{ rows, cols int }{{3, 0}, {0, 3}, {0, 0}} {
		got, total, err := Solve(nil, tc.rows, tc.cols)
		if err != nil {
			t.Fatalf("%d×%d: %v", tc.rows, tc.cols, err)
		}
		if len(got) != tc.rows || total != 0 {
			t.Fatalf("%d×%d: got %v total %v, want %d rows of -1 and total 0", tc.rows, tc.cols, got, total, tc.rows)
		}
		for i, j := range got {
			if j != -1 {
				t.Fatalf("%d×%d: row %d assigned to %d", tc.rows, tc.cols, i, j)
			}
		}
	}
}

// TestSolveNamesTheBadCell catches arithmetic faults in the error message's
// cell coordinates (i/cols and i%cols swapped for products): the message is
// what an operator reads to find the bad cost.
func TestSolveNamesTheBadCell(t *testing.T) {
	cost := []float64{0, 1, 2, 3, 4, 5, 6, math.NaN(), 8, 9, 10, 11} // 3×4, bad cell (1,3)
	_, _, err := Solve(cost, 3, 4)
	if err == nil || !strings.Contains(err.Error(), "cost[1,3]") {
		t.Fatalf("err = %v, want it to name cost[1,3]", err)
	}
}

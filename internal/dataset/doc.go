// Package dataset loads multi-instance (multi-label) data sets from the
// formats found in the literature and from the project's own formats, and
// returns them as *mil.Dataset.
//
// Load sniffs the format from the file name:
//
//	.mat            MATLAB v5: MSCV2 (variables Bags, y, Y, trnidx, tstidx) or
//	                Pham et al.'s MIML-NC newlabels.mat (X, y, Y)
//	.arff           Weka relational ARFF; label attributes named by a sibling
//	                Mulan .xml with the same base name when present. A Mulan
//	                ARFF without a relational attribute (Corel5k, dense or
//	                sparse rows) needs the .xml; each present feature becomes
//	                one one-hot instance
//	.data           C4.5 when a sibling .names with the same base name
//	                exists, MILL text (dense or sparse index:value) otherwise
//	.jsonl, .ndjson the project's JSON-lines bag format
//	.csv            the project's CSV instance format
//
// # Sparse instances
//
// A MILL file of index:value pairs loads as sparse bags (mil.Bag.Sparse,
// 0-based ascending indices), in memory proportional to its non-zeros, and
// so does a relational ARFF bag with Weka sparse instance rows
// ({index value, ...}, 0-based). mil.Dataset.Densified converts them for
// consumers that read dense rows (the model registry does it for the
// kinds without a sparse path, models.Wrap).
//
// # Binary MIL
//
// Binary data sets (musk, elephant, fox) become single-class MIML sets:
// Classes is ["positive"], a positive bag has Labels [0] and a negative bag
// has Labels [] (empty but non-nil: labeled, with no class).
//
// # MSCV2
//
// LoadMSCV2 also returns the file's train/test split (trnidx/tstidx, 532 and
// 59 bags) as 0-based indices. The file does not name the 23 classes and the
// ORLR paper does not list them, so they are c0..c22. Bag IDs are the
// dataset name and the 1-based MATLAB index ("MSCV2-17"), as for Pham's
// files; MILL and C4.5 bags keep their file's bag names.
//
// # C4.5
//
// The .names file lists the two classes first ("1" is positive when
// present, else the second one), then one attribute per line: the first
// discrete attribute names the bag, continuous attributes are the features
// (misvm's "continuous scale=0.001" hint is ignored: features stay raw), and
// other discrete attributes (the instance name) are skipped.
//
// # Pham's novel class
//
// In newlabels.mat each instance belongs to one of C known classes or to a
// merged novel class (the last column of y). The dataset therefore has C+1
// classes, the last named "unknown" (NovelClass), and InstanceLabels use
// index C for novel instances. Bag Labels come from Y and cover the C known
// classes only, as in the paper: the novel class is never part of a weak
// label, it is what a model must discover. A bag made only of novel
// instances has an empty (non-nil) label set. The name is the one under
// which a model with an unknown class (orlr with unknown=true) takes the
// class as its own, so that instance accuracy, SLR and Dummy count it like
// any class.
//
// # JSON lines
//
// One JSON object per line. The optional first line is a header, recognised
// by its "format" member:
//
//	{"format":"mimlstream.bags/v1","name":"mscv2","classes":["c0","c1"],"dim":48}
//
// and every other line is a bag:
//
//	{"id":"b1","instances":[[0.1,0.2],[0.3,0.4]],"labels":[0,1],"instance_labels":[0,1]}
//
// "labels" absent or null means unlabeled, [] means labeled with no class;
// "instance_labels" is optional and uses -1 for unknown. Labels are sorted
// and deduplicated on read. Without a header the classes are named c0..cK-1
// where K is one more than the largest label seen, and the dimension is the
// first bag's. Blank lines are skipped. WriteJSONL always writes a header.
//
// # CSV
//
// One instance per row, with a header row. Columns are found by name:
//
//	bag_id                      required; rows of a bag need not be contiguous
//	labels[:name0;name1;...]    optional bag label set as ';'-separated class
//	                            indices, e.g. "1;4", repeated on every row of
//	                            the bag; "" is the empty set, "?" unlabeled.
//	                            The header may carry the class vocabulary
//	                            after a colon: "labels:desert;mountains;sea".
//	instance_label              optional instance class index, "" or -1 unknown
//	anything else               a numeric feature, in column order
//
// WriteCSV writes bag_id, labels (with the vocabulary), instance_label when
// the data has instance labels, then f1..fD.
//
// # Errors
//
// Malformed input yields an error wrapping ErrFormat that names the file,
// the line (or MAT variable) and what is wrong; loaders never panic on bad
// input.
package dataset
